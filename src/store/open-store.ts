import { join } from "node:path";
import type { Migration } from "./migrations/index.ts";
import { openPostgresStore } from "./postgres/store.ts";
import { openSqliteStore } from "./sqlite/store.ts";
import type { EventRetention, Store } from "./types.ts";

/** File name of the embedded database inside `dataDir`. */
export const SQLITE_FILE_NAME = "roz.db";

export interface StoreSettings {
  /** `ROZ_DATA_DIR`: where the embedded database lives (created on first start). */
  dataDir: string;
  /** `DATABASE_URL`: when set, PostgreSQL is used instead of the embedded store. */
  databaseUrl?: string;
  eventRetention?: EventRetention;
  /** SQLite only: see `SqliteOptions.synchronous` (default `FULL`). */
  sqliteSynchronous?: "NORMAL" | "FULL";
  /** PostgreSQL only: pool size (default 10). */
  poolMax?: number;
  /** PostgreSQL only: errors of idle pooled connections, for logging. */
  onError?: (err: Error) => void;
}

/**
 * Opens the configured store: PostgreSQL when `databaseUrl` is set, else SQLite at
 * `${dataDir}/roz.db`. Pending migrations run before it resolves; a failed one rejects with
 * a RozError naming it. `migrations` is a test hook.
 */
export function openStore(settings: StoreSettings, testing: { migrations?: readonly Migration[] } = {}): Promise<Store> {
  const common = { eventRetention: settings.eventRetention, migrations: testing.migrations };
  if (settings.databaseUrl !== undefined && settings.databaseUrl !== "") {
    return openPostgresStore(settings.databaseUrl, { ...common, poolMax: settings.poolMax, onError: settings.onError });
  }
  return openSqliteStore(join(settings.dataDir, SQLITE_FILE_NAME), { ...common, synchronous: settings.sqliteSynchronous });
}
