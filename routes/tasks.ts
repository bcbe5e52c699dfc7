import type { Teams, TaskView } from "../src/teams/index.ts";
import { principalOf } from "../src/auth/index.ts";
import { RozError } from "../src/errors/index.ts";
import type { Task, TaskStatus, Worker } from "../src/store/index.ts";
import {
  errorResponses,
  idParams,
  iso,
  pageQueryProperties,
  pageRequestOf,
  pageSchema,
  type RoutePlugin,
  timeSchema,
  toPage,
  usageJson,
  usageSchema,
} from "./schemas.ts";

export interface TaskRoutesOptions {
  teams: Pick<Teams, "createTask" | "getTask" | "listTasks" | "cancelTask">;
}

const statuses: TaskStatus[] = ["running", "completed", "cancelled"];
const modes = ["react", "ooda_re_act"] as const;

const workerSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    index: { type: "integer", description: "1-based, in spawn order" },
    prompt: { type: "string" },
    mode: { type: "string", enum: modes },
    model: { type: "string" },
    depth: { type: "integer" },
    status: { type: "string", enum: ["running", "completed", "failed"] },
    result: { type: "string", description: "the worker's final text (completed)" },
    failure: { type: "string", enum: ["timeout", "model_error", "cancelled", "e_stop", "safety_violation"] },
    usage: usageSchema,
    created_at: timeSchema,
    ended_at: timeSchema,
  },
  required: ["id", "index", "prompt", "mode", "model", "depth", "status", "usage", "created_at"],
} as const;

const taskProperties = {
  id: { type: "string" },
  status: { type: "string", enum: statuses, description: "running until every worker has exited" },
  prompt: { type: "string" },
  environment_id: { type: "string" },
  session_id: { type: "string" },
  model: { type: "string" },
  last_seq: { type: "integer", description: "seq of the last team event (WatchTeam after_seq)" },
  usage: { ...usageSchema, description: "sum of the finished workers' usage" },
  created_at: timeSchema,
  updated_at: timeSchema,
  ended_at: timeSchema,
} as const;
const taskRequired = ["id", "status", "prompt", "environment_id", "last_seq", "usage", "created_at", "updated_at"] as const;
const taskSchema = { type: "object", properties: taskProperties, required: taskRequired } as const;
const taskWithWorkersSchema = {
  type: "object",
  properties: { ...taskProperties, workers: { type: "array", items: workerSchema } },
  required: [...taskRequired, "workers"],
} as const;

const promptSchema = { type: "string", minLength: 1, maxLength: 1_000_000 } as const;
const createBody = {
  type: "object",
  properties: {
    prompt: promptSchema,
    environment_id: { type: "string", format: "uuid" },
    model: { type: "string", minLength: 1, maxLength: 256 },
    session_id: { type: "string", format: "uuid", description: "a live session of yours: the workers may use its client tools" },
    workers: {
      type: "array",
      minItems: 1,
      maxItems: 1000,
      items: {
        type: "object",
        properties: { prompt: promptSchema, mode: { type: "string", enum: modes }, model: { type: "string", minLength: 1, maxLength: 256 } },
        required: ["prompt"],
        additionalProperties: false,
      },
    },
  },
  required: ["prompt"],
  additionalProperties: false,
} as const;

const listQuery = {
  type: "object",
  properties: { ...pageQueryProperties, status: { type: "string", enum: statuses } },
  additionalProperties: false,
} as const;

const deleteQuery = {
  type: "object",
  properties: { reason: { type: "string", enum: ["cancelled", "e_stop"], default: "cancelled", description: "what running workers fail with" } },
  additionalProperties: false,
} as const;

const taskJson = (t: Task) => ({
  id: t.id,
  status: t.status,
  prompt: t.prompt,
  environment_id: t.environmentId,
  ...(t.sessionId !== undefined ? { session_id: t.sessionId } : {}),
  ...(t.model !== undefined ? { model: t.model } : {}),
  last_seq: t.lastSeq,
  usage: usageJson(t.usage, t.costUsd),
  created_at: iso(t.createdAt),
  updated_at: iso(t.updatedAt),
  ...(t.endedAt !== undefined ? { ended_at: iso(t.endedAt) } : {}),
});

const workerJson = (w: Worker) => ({
  id: w.id,
  index: w.index,
  prompt: w.prompt,
  mode: w.mode,
  model: w.model,
  depth: w.depth,
  status: w.status,
  ...(w.result !== undefined ? { result: w.result } : {}),
  ...(w.failure !== undefined ? { failure: w.failure } : {}),
  usage: usageJson(w.usage, w.costUsd),
  created_at: iso(w.createdAt),
  ...(w.endedAt !== undefined ? { ended_at: iso(w.endedAt) } : {}),
});

const viewJson = (v: TaskView) => ({ ...taskJson(v.task), workers: v.workers.map(workerJson) });

const notFound = (id: string) => new RozError("not_found", `task "${id}" not found`);

/** `/tasks` (under `/v1`): multi-agent tasks (create, list, get with workers, cancel); scope `tasks`. */
export const taskRoutes: RoutePlugin<TaskRoutesOptions> = async (app, { teams }) => {
  const config = { scope: "tasks" } as const;
  const tags = ["tasks"];

  app.post(
    "/tasks",
    {
      config,
      schema: {
        summary: "Start a task: one worker with the prompt, or the given workers",
        tags,
        body: createBody,
        response: { 201: taskWithWorkersSchema, ...errorResponses(404, 409, 422) },
      },
    },
    async (request, reply) => {
      const b = request.body;
      const view = await teams.createTask(principalOf(request).tenantId, {
        prompt: b.prompt,
        ...(b.environment_id !== undefined ? { environmentId: b.environment_id } : {}),
        ...(b.model !== undefined ? { model: b.model } : {}),
        ...(b.session_id !== undefined ? { sessionId: b.session_id } : {}),
        ...(b.workers !== undefined ? { workers: b.workers } : {}),
      });
      return reply.status(201).send(viewJson(view));
    },
  );

  app.get(
    "/tasks",
    { config, schema: { summary: "List tasks, newest first", tags, querystring: listQuery, response: { 200: pageSchema(taskSchema), ...errorResponses() } } },
    async (request) => {
      const { status } = request.query;
      const page = await teams.listTasks(principalOf(request).tenantId, { ...pageRequestOf(request.query), ...(status !== undefined ? { status } : {}) });
      return toPage(page, taskJson);
    },
  );

  app.get(
    "/tasks/:id",
    {
      config,
      schema: {
        summary: "A task with its workers, results and usage",
        tags,
        params: idParams,
        response: { 200: taskWithWorkersSchema, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const view = await teams.getTask(principalOf(request).tenantId, id);
      if (!view) throw notFound(id);
      return viewJson(view);
    },
  );

  app.delete(
    "/tasks/:id",
    {
      config,
      schema: {
        summary: "Cancel a task: running workers fail (cancelled, or e_stop) and exit; answers once it has ended",
        tags,
        params: idParams,
        querystring: deleteQuery,
        response: { 200: taskWithWorkersSchema, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const { reason } = request.query;
      const view = await teams.cancelTask(principalOf(request).tenantId, id, reason);
      if (!view) throw notFound(id);
      return viewJson(view);
    },
  );
};
