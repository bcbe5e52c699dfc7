import type { NodeStore } from "../types.ts";
import type { StoreContext } from "./context.ts";

/** Server processes and their heartbeats: who may still own a live session. */
export function nodeRepo({ db, now }: StoreContext): NodeStore {
  return {
    async heartbeatNode(id, at = now(), process) {
      await db.run(
        `INSERT INTO nodes (id, started_at, heartbeat_at, stopped_at, host, pid) VALUES (?, ?, ?, NULL, ?, ?)
         ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, stopped_at = NULL`,
        [id, at, at, process?.host ?? null, process?.pid ?? null],
      );
    },

    async stopNode(id, at = now()) {
      await db.run("UPDATE nodes SET stopped_at = ? WHERE id = ?", [at, id]);
    },

    async runningNodesOn(host) {
      const rows = await db.all("SELECT id, host, pid, heartbeat_at FROM nodes WHERE host = ? AND pid IS NOT NULL AND stopped_at IS NULL", [host]);
      return rows.map((r) => ({ id: String(r.id), host: String(r.host), pid: Number(r.pid), heartbeatAt: Number(r.heartbeat_at) }));
    },

    releaseNodeSessions(id) {
      // Its last sign of life is when these sessions lost their runner: the detach grace counts from there.
      return db.run(
        `UPDATE sessions SET status = 'detached', node_id = NULL,
           updated_at = COALESCE((SELECT ${GONE_AT} FROM nodes n WHERE n.id = ? AND ${GONE_AT} > sessions.updated_at), updated_at)
         WHERE status IN ('active', 'detached') AND node_id = ?`,
        [id, id],
      );
    },

    async sweepOrphanedSessions({ aliveSince, idleBefore }, at = now()) {
      const detached = await db.run(`UPDATE sessions SET status = 'detached' WHERE status = 'active' AND (node_id IS NULL OR NOT ${NODE_ALIVE("node_id")})`, [
        aliveSince,
      ]);
      // Not ended while its node runs, nor before the grace has passed since the node was last seen.
      const ended = await db.run(
        `UPDATE sessions SET status = 'cancelled', end_reason = 'abandoned', updated_at = ?, ended_at = COALESCE(ended_at, ?)
         WHERE status IN ('active', 'detached') AND updated_at < ?
           AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = sessions.node_id
             AND ((n.stopped_at IS NULL AND n.heartbeat_at >= ?) OR ${GONE_AT} >= ?))`,
        [at, at, idleBefore, aliveSince, idleBefore],
      );
      return { detached, ended };
    },
  };
}

/** The last sign of life of node `n`: when it stopped, else its last heartbeat. */
const GONE_AT = "COALESCE(n.stopped_at, n.heartbeat_at)";

/** The SQL condition "the node in column `column` heart-beats since `?`" (one parameter). */
export const NODE_ALIVE = (column: string): string => `${column} IN (SELECT id FROM nodes WHERE heartbeat_at >= ? AND stopped_at IS NULL)`;
