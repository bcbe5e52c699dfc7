import type { FastifyBaseLogger } from "fastify";
import { openStore, type Store } from "../store/index.ts";
import type { Config } from "./config.ts";
import type { Lifecycle } from "./lifecycle.ts";
import { storeOpenFailure } from "./startup-errors.ts";

/** How often the event-log retention is applied. */
const PRUNE_INTERVAL_MS = 10 * 60_000;

/**
 * The app's store: `given` (the caller's, not closed by the app), else the one `Config` names
 * (SQLite in the data dir, or PostgreSQL), closed last at shutdown. Either way this app
 * applies its event-log retention: the store starts no timers of its own.
 */
export async function setUpStore(config: Config, given: Store | undefined, log: FastifyBaseLogger, lifecycle: Lifecycle): Promise<Store> {
  const store = await lifecycle.own("store", given, () =>
    openStore({
      dataDir: config.dataDir,
      ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
      eventRetention: { maxEventsPerSession: config.eventRetention },
      sqliteSynchronous: config.sqliteSynchronous === "full" ? "FULL" : "NORMAL",
      onError: (err) => log.error({ err }, "store connection error"),
    }).catch((err: unknown) => {
      throw storeOpenFailure(err, config);
    }),
  );
  const pruneTimer = setInterval(() => {
    store.pruneEvents().catch((err: unknown) => log.warn({ err }, "could not prune session events"));
  }, PRUNE_INTERVAL_MS);
  pruneTimer.unref();
  lifecycle.onClose("event pruning", () => clearInterval(pruneTimer));
  return store;
}
