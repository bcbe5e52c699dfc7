import { randomUUID } from "node:crypto";
import type { Task, TaskStatus, TaskStore, TeamEventRow, Worker, WorkerStatus } from "../types.ts";
import type { Sql, SqlRow, SqlValue } from "./database.ts";
import { NODE_ALIVE } from "./nodes.ts";
import type { StoreContext } from "./context.ts";
import { insertRows } from "./insert-rows.ts";
import { listPage } from "./pagination.ts";
import { conflictAs, fromJson, opt, optNum, toJson, usageOf } from "./rows.ts";

const DEFAULT_READ_LIMIT = 1000;

const taskOf = (row: SqlRow): Task => ({
  id: String(row.id),
  tenantId: String(row.tenant_id),
  environmentId: String(row.environment_id),
  sessionId: opt(row.session_id as string | null),
  prompt: String(row.prompt),
  model: opt(row.model as string | null),
  status: row.status as TaskStatus,
  nodeId: opt(row.node_id as string | null),
  lastSeq: Number(row.last_seq),
  usage: usageOf(row),
  costUsd: Number(row.cost_usd ?? 0),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
  endedAt: optNum(row.ended_at),
});

const workerOf = (row: SqlRow): Worker => ({
  id: String(row.id),
  taskId: String(row.task_id),
  index: Number(row.idx),
  prompt: String(row.prompt),
  mode: String(row.mode),
  model: String(row.model),
  depth: Number(row.depth),
  status: row.status as WorkerStatus,
  result: opt(row.result as string | null),
  failure: opt(row.failure as string | null),
  transcript: row.transcript === null || row.transcript === undefined ? undefined : fromJson(row.transcript),
  usage: usageOf(row),
  costUsd: Number(row.cost_usd ?? 0),
  createdAt: Number(row.created_at),
  endedAt: optNum(row.ended_at),
});

/** Whether the task exists and belongs to the tenant: the guard of every task-scoped call. */
async function ownsTask(q: Sql, tenantId: string, taskId: string): Promise<boolean> {
  return (await q.get("SELECT 1 AS ok FROM tasks WHERE id = ? AND tenant_id = ?", [taskId, tenantId])) !== undefined;
}

export function taskRepo({ db, now }: StoreContext): TaskStore {
  return {
    createTask(tenantId, input) {
      const at = now();
      return conflictAs(db.dialect, "a task with this id already exists", async () => {
        const row = await db.get(
          `INSERT INTO tasks (id, tenant_id, environment_id, session_id, prompt, model, status, node_id, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?) RETURNING *`,
          [input.id ?? randomUUID(), tenantId, input.environmentId, input.sessionId, input.prompt, input.model, input.nodeId, at, at],
        );
        return taskOf(row!);
      });
    },

    async getTask(tenantId, id) {
      const row = await db.get("SELECT * FROM tasks WHERE tenant_id = ? AND id = ?", [tenantId, id]);
      return row && taskOf(row);
    },

    listTasks(tenantId, filter = {}) {
      const where = ["tenant_id = ?"];
      const params: SqlValue[] = [tenantId];
      if (filter.status !== undefined) {
        where.push("status = ?");
        params.push(filter.status);
      }
      return listPage(db, { table: "tasks", where, params, page: filter, map: taskOf });
    },

    addWorker(tenantId, taskId, input) {
      return conflictAs(db.dialect, "a worker with this id already exists", () =>
        db.transaction(async (tx) => {
          if (!(await ownsTask(tx, tenantId, taskId))) return undefined;
          const last = await tx.get("SELECT MAX(idx) AS idx FROM workers WHERE task_id = ?", [taskId]);
          const row = await tx.get(
            `INSERT INTO workers (id, task_id, idx, prompt, mode, model, depth, status, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?) RETURNING *`,
            [input.id ?? randomUUID(), taskId, Number(last?.idx ?? 0) + 1, input.prompt, input.mode, input.model, input.depth, now()],
          );
          return workerOf(row!);
        }),
      );
    },

    async listWorkers(tenantId, taskId) {
      if (!(await ownsTask(db, tenantId, taskId))) return undefined;
      return (await db.all("SELECT * FROM workers WHERE task_id = ? ORDER BY idx", [taskId])).map(workerOf);
    },

    endWorker(tenantId, taskId, workerId, end) {
      const u = end.usage;
      return db.transaction(async (tx) => {
        if (!(await ownsTask(tx, tenantId, taskId))) return false;
        const changed = await tx.run(
          `UPDATE workers SET status = ?, result = ?, failure = ?, transcript = ?, input_tokens = ?, output_tokens = ?,
             cache_read_tokens = ?, cache_creation_tokens = ?, cost_usd = ?, ended_at = ?
           WHERE id = ? AND task_id = ? AND status = 'running'`,
          [
            end.status,
            end.result,
            end.failure,
            end.transcript === undefined ? null : toJson(end.transcript),
            u.inputTokens,
            u.outputTokens,
            u.cacheReadTokens,
            u.cacheCreationTokens,
            end.costUsd ?? 0,
            now(),
            workerId,
            taskId,
          ],
        );
        if (changed === 0) return false;
        await tx.run(
          `UPDATE tasks SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
             cache_read_tokens = cache_read_tokens + ?, cache_creation_tokens = cache_creation_tokens + ?, cost_usd = cost_usd + ?, updated_at = ?
           WHERE id = ?`,
          [u.inputTokens, u.outputTokens, u.cacheReadTokens, u.cacheCreationTokens, end.costUsd ?? 0, now(), taskId],
        );
        return true;
      });
    },

    appendTeamEvents(tenantId, taskId, events) {
      return conflictAs(db.dialect, "a team event with this sequence number is already stored", () =>
        db.transaction(async (tx) => {
          const last = Math.max(0, ...events.map((e) => e.seq));
          // The tenant check and the new last seq in one statement: this runs for every batch.
          const owned = await tx.run(
            "UPDATE tasks SET last_seq = CASE WHEN last_seq < ? THEN ? ELSE last_seq END, updated_at = ? WHERE id = ? AND tenant_id = ?",
            [last, last, now(), taskId, tenantId],
          );
          if (owned === 0) return false;
          await insertRows(
            tx,
            "team_events",
            ["task_id", "seq", "payload", "created_at"],
            events.map((e) => [taskId, e.seq, e.payload, e.createdAt]),
          );
          return true;
        }),
      );
    },

    async readTeamEvents(tenantId, taskId, range = {}) {
      if (!(await ownsTask(db, tenantId, taskId))) return undefined;
      const rows = await db.all("SELECT seq, payload, created_at FROM team_events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?", [
        taskId,
        range.afterSeq ?? 0,
        range.limit ?? DEFAULT_READ_LIMIT,
      ]);
      return rows.map((r): TeamEventRow => ({ seq: Number(r.seq), payload: r.payload as Uint8Array, createdAt: Number(r.created_at) }));
    },

    async endTask(tenantId, taskId, status) {
      const at = now();
      const row = await db.get("UPDATE tasks SET status = ?, updated_at = ?, ended_at = ? WHERE tenant_id = ? AND id = ? AND status = 'running' RETURNING *", [
        status,
        at,
        at,
        tenantId,
        taskId,
      ]);
      return row && taskOf(row);
    },

    async runningTasks(nodeId) {
      const where = ["status = 'running'"];
      const params: SqlValue[] = [];
      if (nodeId !== undefined) {
        where.push("node_id = ?");
        params.push(nodeId);
      }
      return (await db.all(`SELECT * FROM tasks WHERE ${where.join(" AND ")} ORDER BY created_at, id`, params)).map(taskOf);
    },

    async orphanedTasks(aliveSince) {
      const rows = await db.all(`SELECT * FROM tasks WHERE status = 'running' AND (node_id IS NULL OR NOT ${NODE_ALIVE("node_id")}) ORDER BY created_at, id`, [
        aliveSince,
      ]);
      return rows.map(taskOf);
    },

    async claimTask(tenantId, taskId, { fromNode, toNode }) {
      const owner = fromNode === undefined ? "node_id IS NULL" : "node_id = ?";
      const changed = await db.run(`UPDATE tasks SET node_id = ? WHERE tenant_id = ? AND id = ? AND status = 'running' AND ${owner}`, [
        toNode,
        tenantId,
        taskId,
        ...(fromNode === undefined ? [] : [fromNode]),
      ]);
      return changed === 1;
    },
  };
}
