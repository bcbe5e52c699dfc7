import type { LeaseStore, SessionStore } from "../types.ts";
import type { StoreContext } from "./context.ts";

/**
 * Deleting ended sessions, and the leases that let one node at a time do it. A session's
 * turns, tool calls, feedback, events and search text go with it (foreign keys cascade).
 */
export function retentionRepo({ db, now }: StoreContext): Pick<SessionStore, "deleteEndedSessions"> & LeaseStore {
  return {
    deleteEndedSessions(endedBefore, limit) {
      return db.run(
        `DELETE FROM sessions WHERE id IN (
           SELECT id FROM sessions
           WHERE ended_at IS NOT NULL AND ended_at <= ? AND status IN ('completed', 'cancelled', 'error')
           ORDER BY ended_at LIMIT ?)`,
        [endedBefore, limit],
      );
    },

    async acquireLease(name, holder, ttlMs, at = now()) {
      // One statement: taken when free, expired, or already ours; otherwise no row comes back.
      const row = await db.get(
        `INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
         WHERE leases.expires_at <= ? OR leases.holder = excluded.holder
         RETURNING holder`,
        [name, holder, at + ttlMs, at],
      );
      return row !== undefined && row.holder === holder;
    },

    async releaseLease(name, holder) {
      await db.run("DELETE FROM leases WHERE name = ? AND holder = ?", [name, holder]);
    },
  };
}
