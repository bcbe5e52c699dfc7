/**
 * What the session layer needs from the outside, as narrow interfaces. `src/app` wires
 * them to the store, the model catalog and the agent factory.
 */
import type { Agent, AgentLimits, AgentOptions, ClientTool, PermissionRule, ServerTool, ToolOutcome, TurnRecord } from "../agent/index.ts";
import type { ModelCatalog } from "../models/index.ts";
import type { SequencedEvent, SessionEvent } from "./types.ts";

/** Who is calling: resolved from the bearer key (or the open-mode principal). */
export interface Principal {
  tenantId: string;
  keyId?: string;
  scopes: readonly string[];
}

/** An environment as the session needs it. */
export interface SessionEnvironment {
  id: string;
  defaultModel?: string;
  instructions?: string;
  permissionRules: PermissionRule[];
}

export type SessionStatus = "active" | "detached" | "completed" | "cancelled" | "error";

export interface SessionPersistence {
  /**
   * Undefined when unknown or another tenant's. Empty id: the tenant's default environment,
   * or, while it does not exist yet, one with id `""` and no rules. Never creates anything.
   */
  resolveEnvironment(tenantId: string, environmentId: string): Promise<SessionEnvironment | undefined>;
  /** Stores a started session; environment id `""` creates the tenant's default environment first. */
  createSession(session: { id: string; tenantId: string; environmentId: string; model: string; hostId?: string }): Promise<void>;
  /** Writes the turn, its tool calls, usage totals and the events since the last flush atomically. */
  appendTurn(tenantId: string, sessionId: string, record: TurnRecord, events: SequencedEvent[]): Promise<void>;
  appendEvents(tenantId: string, sessionId: string, events: SequencedEvent[]): Promise<void>;
  setStatus(tenantId: string, sessionId: string, status: SessionStatus): Promise<void>;
  putFeedback(tenantId: string, sessionId: string, messageId: string, rating: string): Promise<void>;
}

export interface SessionLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Counters and histograms the session layer reports (Prometheus in `src/app`). */
export interface SessionMetrics {
  sessionStatus(status: SessionStatus, delta: number): void;
  turnCompleted(record: TurnRecord): void;
  error(code: string): void;
}

/** Where a client answer (`tool_result`, `permission_decision`) for a routed id goes; false = not waiting. */
export interface ClientAnswerRoute {
  result(outcome: ToolOutcome): boolean;
  decide(approved: boolean): boolean;
}

/**
 * What a started session offers an extension (the teams layer, wired in `src/app`): the
 * session layer knows nothing of teams, only that something may emit on its stream and
 * take the client's answers for ids it registered.
 */
export interface SessionLink {
  readonly id: string;
  readonly tenantId: string;
  /** The resolved model name. */
  readonly model: string;
  readonly environmentId: string;
  /** The rules the session enforces (environment's, then the defaults). */
  permissions(): PermissionRule[];
  /** The client tools the session has now. */
  clientTools(): ClientTool[];
  /** Emits on the session like its own events: numbered, logged, to the attached client. */
  emit(event: SessionEvent): void;
  /** Sends the client's answers for `toolCallId` to `route` until the returned function runs. */
  route(toolCallId: string, route: ClientAnswerRoute): () => void;
}

/** Built once per started session by `SessionDeps.extend`. */
export interface SessionExtension {
  /** Server tools added to the session's agent. */
  serverTools: ServerTool[];
  /** The session ended (`reason` as given to `end`, e.g. the client's cancel reason). */
  ended(status: Exclude<SessionStatus, "active" | "detached">, reason: string): void;
}

export interface SessionDeps {
  models: ModelCatalog;
  createAgent(options: AgentOptions): Agent;
  persistence: SessionPersistence;
  limits: AgentLimits;
  /** Rules that apply after the environment's own (from configuration). */
  defaultPermissions: PermissionRule[];
  defaultMaxContextTokens: number;
  keepaliveIntervalMs: number;
  detachGraceMs: number;
  log: SessionLogger;
  metrics: SessionMetrics;
  /** May this principal start another session now? (per-key rate limit) */
  allowSessionStart(principal: Principal): boolean;
  /** Adds server tools and end hooks to each started session (teams); none when absent. */
  extend?: (link: SessionLink) => SessionExtension;
  /** A stream that sends no `start` within this time ends with `invalid_argument` (default: never). */
  startTimeoutMs?: number;
}
