import { randomUUID } from "node:crypto";
import { defaultEndReason, type NewSession, terminalStatuses, type Session, type SessionEndReason, type SessionStatus, type SessionStore } from "../types.ts";
import type { Dialect, Sql, SqlRow, SqlValue } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { NODE_ALIVE } from "./nodes.ts";
import { listPage } from "./pagination.ts";
import { conflictAs, fromJson, opt, optNum, toJson, usageOf } from "./rows.ts";
import { sessionListWhere } from "./session-list.ts";
import { budgetColumn, budgetField } from "./spend.ts";
import { indexTitle } from "./session-text.ts";

/** A stored end reason, else the one an ended status implies; none while live. */
const endReasonOf = (status: SessionStatus, stored: unknown): SessionEndReason | undefined =>
  status === "active" || status === "detached" ? undefined : ((stored as SessionEndReason | null) ?? defaultEndReason[status]);

export const sessionOf = (row: SqlRow): Session => ({
  id: String(row.id),
  tenantId: String(row.tenant_id),
  environmentId: String(row.environment_id),
  model: String(row.model),
  status: row.status as SessionStatus,
  nodeId: opt(row.node_id as string | null),
  hostId: opt(row.host_id as string | null),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
  endedAt: optNum(row.ended_at),
  endReason: endReasonOf(row.status as SessionStatus, row.end_reason),
  usage: usageOf(row),
  costUsd: Number(row.cost_usd ?? 0),
  ...budgetField(row.budget),
  spent: { tokens: Number(row.spent_tokens ?? 0), costUsd: Number(row.spent_cost_usd ?? 0) },
  turnCount: Number(row.turn_count),
  compactionCount: Number(row.compaction_count),
  ...(row.title !== null && row.title !== undefined ? { title: String(row.title) } : {}),
  metadata: fromJson<Record<string, string>>(row.metadata ?? "{}"),
  archived: Number(row.archived ?? 0) === 1,
});

/** Whether the session exists and belongs to the tenant: the guard of every session-scoped write. */
export async function ownsSession(q: Sql, tenantId: string, sessionId: string): Promise<boolean> {
  return (await q.get("SELECT 1 AS ok FROM sessions WHERE id = ? AND tenant_id = ?", [sessionId, tenantId])) !== undefined;
}

/**
 * Inserts a new session row and its title's search row (see `SessionStore.createSession`): with
 * a title, run it in a transaction. The caller maps a clash to `conflict`.
 */
export async function insertSession(q: Sql, dialect: Dialect, tenantId: string, input: NewSession, at: number): Promise<Session> {
  const status = input.status ?? "active";
  const row = await q.get(
    `INSERT INTO sessions (id, tenant_id, environment_id, model, status, node_id, host_id, created_at, updated_at, ended_at, title, metadata, budget)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    [
      input.id ?? randomUUID(),
      tenantId,
      input.environmentId,
      input.model,
      status,
      input.nodeId,
      input.hostId,
      at,
      at,
      terminalStatuses.includes(status) ? at : null,
      input.title ?? null,
      toJson(input.metadata ?? {}),
      budgetColumn(input.budget),
    ],
  );
  const session = sessionOf(row!);
  if (input.title !== undefined) await indexTitle(q, dialect, session.id, input.title);
  return session;
}

const placeholders = (n: number) => Array.from({ length: n }, () => "?").join(", ");

/** The session operations of this file; changing labels, deleting and storing state are in their own files. */
type SessionRows = Omit<SessionStore, "updateSession" | "deleteEndedSessions" | "saveSessionState">;

export function sessionRepo({ db, now }: StoreContext): SessionRows {
  return {
    createSession(tenantId, input) {
      // A title's search row is written with the session, in one transaction.
      const write = (q: Sql) => insertSession(q, db.dialect, tenantId, input, now());
      return conflictAs(db.dialect, "a session with this id already exists", () => (input.title === undefined ? write(db) : db.transaction(write)));
    },

    async getSession(tenantId, id) {
      const row = await db.get("SELECT * FROM sessions WHERE tenant_id = ? AND id = ?", [tenantId, id]);
      return row && sessionOf(row);
    },

    listSessions(tenantId, filter = {}) {
      const { where, params } = sessionListWhere(db.dialect, tenantId, filter);
      return listPage(db, { table: "sessions", where, params, page: filter, map: sessionOf });
    },

    async updateSessionStatus(tenantId, id, change) {
      const at = now();
      const set = ["status = ?", "updated_at = ?"];
      const params: SqlValue[] = [change.status, at];
      if (!terminalStatuses.includes(change.status)) set.push("ended_at = NULL");
      else if (change.endedAt !== undefined) {
        set.push("ended_at = ?");
        params.push(change.endedAt);
      } else {
        // Ending an already ended session keeps its first end time.
        set.push("ended_at = COALESCE(ended_at, ?)");
        params.push(at);
      }
      if (change.endReason !== undefined && terminalStatuses.includes(change.status)) {
        set.push("end_reason = COALESCE(end_reason, ?)");
        params.push(change.endReason);
      }
      if (change.nodeId !== undefined) {
        set.push("node_id = ?");
        params.push(change.nodeId);
      }
      const where = ["tenant_id = ?", "id = ?"];
      params.push(tenantId, id);
      if (change.from !== undefined) {
        // An empty `from` matches nothing, as "only from one of these (none)" must.
        if (change.from.length === 0) return undefined;
        where.push(`status IN (${placeholders(change.from.length)})`);
        params.push(...change.from);
      }
      const row = await db.get(`UPDATE sessions SET ${set.join(", ")} WHERE ${where.join(" AND ")} RETURNING *`, params);
      return row && sessionOf(row);
    },

    async getResumableSession(tenantId, id, aliveSince) {
      const row = await db.get(
        `SELECT s.*, (SELECT MAX(e.seq) FROM session_events e WHERE e.session_id = s.id) AS last_event_seq,
           CASE WHEN s.node_id IS NOT NULL AND ${NODE_ALIVE("s.node_id")} THEN 1 ELSE 0 END AS owner_alive
         FROM sessions s WHERE s.tenant_id = ? AND s.id = ?`,
        [aliveSince, tenantId, id],
      );
      if (!row) return undefined;
      return {
        ...sessionOf(row),
        lastEventSeq: Math.max(Number(row.last_event_seq ?? 0), Number(row.events_pruned_through)),
        eventsPrunedThrough: Number(row.events_pruned_through),
        ownerAlive: Number(row.owner_alive) === 1,
        state: opt(row.state as string | null),
      };
    },

    async adoptSession(tenantId, id, { fromNode, toNode }) {
      // Compare-and-set on the owner: of all nodes trying at once, exactly one matches.
      const owner = fromNode === undefined ? "node_id IS NULL" : "node_id = ?";
      const changed = await db.run(
        `UPDATE sessions SET node_id = ?, status = 'detached', updated_at = ?
         WHERE tenant_id = ? AND id = ? AND status IN ('active', 'detached') AND ${owner}`,
        [toNode, now(), tenantId, id, ...(fromNode === undefined ? [] : [fromNode])],
      );
      return changed === 1;
    },
  };
}
