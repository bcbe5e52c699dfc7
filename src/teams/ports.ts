/**
 * What the teams layer needs from the outside, as narrow interfaces; `src/app` wires them.
 * Sessions are reached only through `ParentSession`: this layer never imports the session layer.
 */
import type {
  Agent,
  AgentLimits,
  AgentOptions,
  ApprovalQuestion,
  ClientTool,
  LiveTools,
  PermissionRule,
  SpendGate,
  ToolOutcome,
  Tracing,
} from "../agent/index.ts";
import type { EventBus } from "../bus/index.ts";
import type { JsonObject, ModelCatalog } from "../models/index.ts";
import type { Store } from "../store/index.ts";
import type { SequencedTeamEvent } from "./types.ts";

/** Where the client's answer to a forwarded call goes; false when nothing waits for it. */
export interface AnswerRoute {
  result(outcome: ToolOutcome): boolean;
  decide(approved: boolean): boolean;
}

/**
 * A live session whose client runs workers' tools: the narrow port of DESIGN.md "Teams".
 * Calls go to its attached client(s); while it is detached they wait like its own do.
 */
export interface ParentSession {
  readonly sessionId: string;
  readonly tenantId: string;
  /** Its resolved model: the default for its workers. */
  readonly model: string;
  readonly environmentId: string;
  /** The rules it enforces; its workers' calls go under the same ones. */
  permissions(): PermissionRule[];
  clientTools(): ClientTool[];
  /** Sends `ToolRequest{…, worker_id}` to the client. */
  requestTool(call: { workerId: string; toolCallId: string; toolName: string; parameters: JsonObject; timeoutMs: number }): void;
  /** Sends `ToolFinished{…, worker_id}` when a call sent by `requestTool` has ended. */
  toolFinished(finished: { workerId: string; toolCallId: string; toolName: string; success: boolean; result: string; truncated: boolean }): void;
  /** Shows the approval as the session's `waiting_approval`. */
  askApproval(details: ApprovalQuestion): void;
  /** Routes the client's answers for `toolCallId` until the returned function runs. */
  route(toolCallId: string, route: AnswerRoute): () => void;
  /** Sends `TeamStarted{task_id}` on the session. */
  teamStarted(taskId: string): void;
}

export interface TeamLimits {
  workersPerTask: number;
  runningWorkersPerTenant: number;
  /** Deepest worker level: 1 = only sessions and REST spawn workers. */
  maxSpawnDepth: number;
  workerTimeoutMs: number;
}

export interface TeamsLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface TeamsDeps {
  store: Pick<
    Store,
    | "createTask"
    | "getTask"
    | "listTasks"
    | "addWorker"
    | "listWorkers"
    | "endWorker"
    | "appendTeamEvents"
    | "readTeamEvents"
    | "endTask"
    | "runningTasks"
    | "orphanedTasks"
    | "claimTask"
    | "getEnvironment"
    | "getDefaultEnvironment"
    | "getSession"
  >;
  bus: EventBus;
  /** A team event as the bytes a watcher receives (a serialized `roz.v1.TeamEvent`). */
  encode(event: SequencedTeamEvent): Uint8Array;
  models: ModelCatalog;
  createAgent(options: AgentOptions): Agent;
  agentLimits: AgentLimits;
  /** Rules after the environment's (configuration), as sessions use them. */
  defaultPermissions: PermissionRule[];
  defaultMaxContextTokens: number;
  limits: TeamLimits;
  /** This node's id: `WorkerStarted.host_id` and task ownership. */
  nodeId: string;
  /** A node silent this long is gone: its running tasks are closed by another node. */
  nodeExpiryMs: number;
  log: TeamsLogger;
  /** The live server tools (MCP servers') of a worker of this tenant and, if any, parent session. */
  liveTools?: (tenantId: string, sessionId: string | undefined) => LiveTools;
  /** Traces each worker's run as an `invoke_agent` span under the span that spawned it (absent: tracing is off). */
  tracing?: Tracing;
  /** The budgets and spend counting of a worker's model calls: its tenant's and, if any, its parent session's (§13). */
  spend?: (owner: { tenantId: string; sessionId?: string }) => SpendGate;
}
