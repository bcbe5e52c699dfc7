import { setImmediate as yieldToIo } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { Store } from "../store/index.ts";
import type { Config } from "./config.ts";
import type { Lifecycle } from "./lifecycle.ts";

/** The lease that makes one node at a time delete ended sessions. */
export const RETENTION_LEASE = "session_retention";
/** The first sweep comes soon after start (within 10 s, §13), then one an hour. */
const FIRST_SWEEP_MS = 2_000;
const SWEEP_INTERVAL_MS = 60 * 60_000;
/**
 * Sessions deleted per statement: small, so that one batch (with its turns and events) is a
 * short write that other writers hardly wait for.
 */
export const RETENTION_BATCH = 50;
const DAY_MS = 24 * 60 * 60_000;

/**
 * Deletes the sessions that ended `days` or more ago, in batches, while `holder` holds the
 * retention lease (taken for the sweep interval and renewed each batch, so that one node does
 * it each hour and another takes over when that node stops, or an hour after it died). Between batches other work runs.
 * Returns how many sessions were deleted (0 when another node holds the lease).
 */
export async function sweepEndedSessions(
  store: Pick<Store, "acquireLease" | "deleteEndedSessions">,
  holder: string,
  days: number,
  stopped: () => boolean = () => false,
): Promise<number> {
  const now = Date.now();
  const endedBefore = now - days * DAY_MS;
  let deleted = 0;
  while (!stopped() && (await store.acquireLease(RETENTION_LEASE, holder, SWEEP_INTERVAL_MS))) {
    const batch = await store.deleteEndedSessions(endedBefore, RETENTION_BATCH);
    deleted += batch;
    if (batch < RETENTION_BATCH) break;
    await yieldToIo();
  }
  return deleted;
}

/** With `ROZ_SESSION_RETENTION_DAYS` set, sweeps soon after start and then every hour; nothing otherwise. */
export function startSessionRetention(
  store: Store,
  nodeId: string,
  config: Pick<Config, "sessionRetentionDays">,
  log: FastifyBaseLogger,
  lifecycle: Lifecycle,
): void {
  const days = config.sessionRetentionDays;
  if (days === undefined) return;
  let closing = false;
  let running: Promise<void> = Promise.resolve();
  const sweep = () => {
    running = sweepEndedSessions(store, nodeId, days, () => closing)
      .then((deleted) => {
        if (deleted > 0) log.info({ sessions: deleted, retentionDays: days }, "deleted ended sessions past their retention");
      })
      .catch((err: unknown) => log.warn({ err }, "could not delete ended sessions"));
  };
  const first = setTimeout(sweep, FIRST_SWEEP_MS);
  const timer = setInterval(sweep, SWEEP_INTERVAL_MS);
  first.unref();
  timer.unref();
  lifecycle.onClose("session retention", async () => {
    closing = true;
    clearTimeout(first);
    clearInterval(timer);
    await running;
    // A node that stops gives the lease up, so that the next one (a restart too) sweeps at its start.
    await store.releaseLease(RETENTION_LEASE, nodeId).catch((err: unknown) => log.warn({ err }, "could not release the session retention lease"));
  });
}
