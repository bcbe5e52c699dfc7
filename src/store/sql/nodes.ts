import type { NodeStore } from "../types.ts";
import type { StoreContext } from "./context.ts";

/** Server processes and their heartbeats: who may still own a live session. */
export function nodeRepo({ db, now }: StoreContext): NodeStore {
  return {
    async heartbeatNode(id, at = now()) {
      await db.run(
        `INSERT INTO nodes (id, started_at, heartbeat_at, stopped_at) VALUES (?, ?, ?, NULL)
         ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, stopped_at = NULL`,
        [id, at, at],
      );
    },

    async stopNode(id, at = now()) {
      await db.run("UPDATE nodes SET stopped_at = ? WHERE id = ?", [at, id]);
    },

    async endAbandonedSessions({ aliveSince, idleBefore }, at = now()) {
      return db.run(
        `UPDATE sessions SET status = 'error', updated_at = ?, ended_at = COALESCE(ended_at, ?)
         WHERE status IN ('active', 'detached') AND updated_at < ?
           AND (node_id IS NULL OR NOT ${NODE_ALIVE("node_id")})`,
        [at, at, idleBefore, aliveSince],
      );
    },
  };
}

/** The SQL condition "the node in column `column` heart-beats since `?`" (one parameter). */
export const NODE_ALIVE = (column: string): string => `${column} IN (SELECT id FROM nodes WHERE heartbeat_at >= ? AND stopped_at IS NULL)`;
