import { migrations as allMigrations, runMigrations, type Migration } from "../migrations/index.ts";
import type { Store } from "../types.ts";
import type { SqlDatabase } from "./database.ts";
import { createSqlStore, type SqlStoreOptions } from "./store.ts";

export interface MigratingStoreOptions extends SqlStoreOptions {
  /** The schema versions to apply (tests); every released migration by default. */
  migrations?: readonly Migration[];
}

/** Migrates `db` and wraps it as a Store; on a failed migration the database is closed and the error rethrown. */
export async function openSqlStore(db: SqlDatabase, options: MigratingStoreOptions): Promise<Store> {
  try {
    await runMigrations(db, options.migrations ?? allMigrations, options.now);
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
  return createSqlStore(db, options);
}
