import { openSqlStore, type MigratingStoreOptions } from "../sql/open.ts";
import type { Store } from "../types.ts";
import { PostgresDatabase, type PostgresOptions } from "./database.ts";

export type OpenPostgresOptions = PostgresOptions & MigratingStoreOptions;

/**
 * Opens a pooled store on the PostgreSQL database at `url` and runs pending migrations under
 * an advisory lock, so any number of nodes may start at once.
 */
export function openPostgresStore(url: string, options: OpenPostgresOptions = {}): Promise<Store> {
  return openSqlStore(new PostgresDatabase(url, options), options);
}
