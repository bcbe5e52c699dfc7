import type { Config } from "../app/config.ts";
import { openStore, type Store } from "../store/index.ts";

/** Runs `fn` on the configured store (ROZ_DATA_DIR or DATABASE_URL), closing it afterwards. */
export async function withStore<T>(config: Pick<Config, "dataDir" | "databaseUrl">, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore({ dataDir: config.dataDir, ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}) });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
