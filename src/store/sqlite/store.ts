import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { openSqlStore, type MigratingStoreOptions } from "../sql/open.ts";
import type { Store } from "../types.ts";
import { SqliteDatabase, type SqliteOptions } from "./database.ts";

export type OpenSqliteOptions = SqliteOptions & MigratingStoreOptions;

/**
 * Opens the embedded store at `path` (its directory is created when missing), or an
 * in-memory one for `":memory:"`, and runs pending migrations. Open a file once per process.
 */
export async function openSqliteStore(path: string, options: OpenSqliteOptions = {}): Promise<Store> {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  return openSqlStore(await SqliteDatabase.open(path, options), options);
}
