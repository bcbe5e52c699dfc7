import { toAgentMode, type ServerTool, type ToolOutcome } from "../agent/index.ts";
import { RozError, toRozError } from "../errors/index.ts";
import type { JsonObject } from "../models/index.ts";
import type { WorkerEnding, WorkerRequest } from "./types.ts";

/** What the two team tools do for whoever holds them (a session or a worker). */
export interface TeamToolHost {
  spawn(request: WorkerRequest): Promise<{ workerId: string; taskId: string }>;
  /** Waits until every listed worker (default: every one this holder spawned) has ended, or the time is up. */
  wait(workerIds: string[] | undefined, timeoutMs: number | undefined, signal: AbortSignal): Promise<{ workerId: string; ending?: WorkerEnding }[]>;
}

export const SPAWN_WORKER = "spawn_worker";
export const WAIT_FOR_WORKERS = "wait_for_workers";

const ok = (value: unknown): ToolOutcome => ({ success: true, result: JSON.stringify(value), truncated: false });

/** A refusal the model can read: `<code>: <message>`, e.g. `resource_exhausted: …`. */
function failure(err: unknown): ToolOutcome {
  const e = toRozError(err);
  return { success: false, result: `${e.code}: ${e.message}`, truncated: false };
}

const invalid = (message: string): never => {
  throw new RozError("invalid_argument", message);
};

function spawnRequestOf(p: JsonObject): WorkerRequest {
  if (typeof p.prompt !== "string" || p.prompt.trim() === "") invalid("spawn_worker needs a non-empty string `prompt`");
  const request: WorkerRequest = { prompt: p.prompt as string };
  if (p.mode !== undefined && p.mode !== null) {
    const mode = typeof p.mode === "string" ? toAgentMode(p.mode) : undefined;
    if (mode === undefined) invalid(`unknown mode ${JSON.stringify(p.mode)}: use react or ooda_re_act`);
    request.mode = mode;
  }
  if (p.model !== undefined && p.model !== null) {
    if (typeof p.model !== "string") invalid("`model` must be a string");
    if (p.model !== "") request.model = p.model as string;
  }
  const tools = p.tools;
  if (tools !== undefined && tools !== null) {
    if (tools === "all" || tools === "none") request.tools = tools;
    else if (Array.isArray(tools) && tools.every((t) => typeof t === "string")) request.tools = tools as string[];
    else invalid('`tools` must be "all", "none" or a list of tool names');
  }
  return request;
}

function waitArgsOf(p: JsonObject): { ids: string[] | undefined; timeoutMs: number | undefined } {
  const ids = p.worker_ids;
  if (ids !== undefined && ids !== null && !(Array.isArray(ids) && ids.every((i) => typeof i === "string")))
    invalid("`worker_ids` must be a list of worker ids");
  const t = p.timeout_ms;
  if (t !== undefined && t !== null && !(typeof t === "number" && Number.isFinite(t) && t >= 0)) invalid("`timeout_ms` must be a non-negative number");
  return { ids: (ids as string[] | null | undefined) ?? undefined, timeoutMs: (t as number | null | undefined) ?? undefined };
}

/** `spawn_worker` and `wait_for_workers` as server tools of an agent. */
export function teamTools(host: TeamToolHost): ServerTool[] {
  return [
    {
      name: SPAWN_WORKER,
      description:
        "Start a worker: an agent that runs the given prompt on its own and reports a result. Returns {worker_id, task_id} at once; use wait_for_workers to get results.",
      parametersSchema: {
        type: "object",
        properties: {
          prompt: { type: "string", description: "the worker's task, as its first message" },
          mode: { type: "string", enum: ["react", "ooda_re_act"] },
          model: { type: "string", description: "provider/model; default: this session's model" },
          tools: {
            description: 'client tools the worker may use: "all" (default), "none", or a list of names',
            anyOf: [
              { type: "string", enum: ["all", "none"] },
              { type: "array", items: { type: "string" } },
            ],
          },
        },
        required: ["prompt"],
      },
      async run(parameters) {
        try {
          const { workerId, taskId } = await host.spawn(spawnRequestOf(parameters));
          return ok({ worker_id: workerId, task_id: taskId });
        } catch (err) {
          return failure(err);
        }
      },
    },
    {
      name: WAIT_FOR_WORKERS,
      description: "Wait for workers to finish (default: all you spawned) and get each one's result or failure.",
      parametersSchema: {
        type: "object",
        properties: {
          worker_ids: { type: "array", items: { type: "string" } },
          timeout_ms: { type: "integer", minimum: 0, description: "stop waiting after this long; unfinished workers are reported as running" },
        },
      },
      async run(parameters, signal) {
        try {
          const { ids, timeoutMs } = waitArgsOf(parameters);
          const results = await host.wait(ids, timeoutMs, signal);
          return ok({
            workers: results.map(({ workerId, ending }) =>
              ending === undefined
                ? { worker_id: workerId, status: "running" }
                : ending.status === "completed"
                  ? { worker_id: workerId, status: "completed", result: ending.result }
                  : { worker_id: workerId, status: "failed", reason: ending.reason },
            ),
          });
        } catch (err) {
          return failure(err);
        }
      },
    },
  ];
}
