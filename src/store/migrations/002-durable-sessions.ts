import type { Migration } from "./migration.ts";

/**
 * Sessions that outlive their process: each server process heart-beats in `nodes`, so that
 * only the sessions of nodes that stopped heart-beating are taken over; a session keeps the
 * state needed to continue it (`state`, a JSON snapshot of its agent); and the event log
 * remembers how far retention has deleted it (`events_pruned_through`), so that a re-attach
 * from an older seq is told its events expired instead of getting a silent gap.
 */
export const durableSessions: Migration = {
  version: 2,
  name: "durable_sessions",
  statements: () => [
    `CREATE TABLE nodes (
      id TEXT PRIMARY KEY,
      started_at BIGINT NOT NULL,
      heartbeat_at BIGINT NOT NULL,
      stopped_at BIGINT
    )`,
    `ALTER TABLE sessions ADD COLUMN state TEXT`,
    `ALTER TABLE sessions ADD COLUMN events_pruned_through BIGINT NOT NULL DEFAULT 0`,
  ],
};
