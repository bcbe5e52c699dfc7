/**
 * Durable state. Other layers import only from here: `openStore(settings)` and the types.
 */
export * from "./types.ts";
export { openStore, SQLITE_FILE_NAME, type StoreSettings } from "./open-store.ts";
export { openSqliteStore, type OpenSqliteOptions } from "./sqlite/store.ts";
export { openPostgresStore, type OpenPostgresOptions } from "./postgres/store.ts";
export { migrations, runMigrations, type Migration } from "./migrations/index.ts";
export { DEFAULT_EVENT_RETENTION } from "./sql/store.ts";
export { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from "./sql/pagination.ts";
