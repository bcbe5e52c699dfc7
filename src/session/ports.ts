/**
 * What the session layer needs from the outside, as narrow interfaces. `src/app` wires
 * them to the store, the model catalog and the agent factory.
 */
import type {
  Agent,
  AgentLimits,
  AgentOptions,
  ClientTool,
  LiveTools,
  PermissionRule,
  ServerTool,
  SpendGate,
  ToolOutcome,
  TurnRecord,
} from "../agent/index.ts";
import type { Budget, Principal, Tracing } from "../domain/index.ts";
import type { ModelCatalog } from "../models/index.ts";
import type { SessionStateWrite, StoredMessages, StoredTurn, TurnOrigin } from "../store/index.ts";
import type { LoggedEvent, SequencedEvent, SessionEvent, SessionStatus } from "./types.ts";

export type { SessionStatus } from "./types.ts";

export type { Principal } from "../domain/index.ts";

/** An environment as the session needs it. */
export interface SessionEnvironment {
  id: string;
  defaultModel?: string;
  instructions?: string;
  permissionRules: PermissionRule[];
  /** Its word on the team tools; absent: `SessionDeps.teamsDefault` decides. */
  teams?: boolean;
}

/** A started session as `createSession` stores it. */
export interface NewStoredSession {
  id: string;
  tenantId: string;
  environmentId: string;
  model: string;
  hostId?: string;
  title?: string;
  metadata?: Record<string, string>;
  budget?: Budget;
}

export interface SessionPersistence {
  /**
   * Undefined when unknown or another tenant's. Empty id: the tenant's default environment,
   * or, while it does not exist yet, one with id `""` and no rules. Never creates anything.
   */
  resolveEnvironment(tenantId: string, environmentId: string): Promise<SessionEnvironment | undefined>;
  /** Stores a started session; environment id `""` creates the tenant's default environment first. */
  createSession(session: NewStoredSession): Promise<void>;
  /**
   * Writes the turn, its tool calls, usage totals, the events since the last flush and the
   * session's state (when given: its state row and changed message rows) atomically.
   */
  appendTurn(tenantId: string, sessionId: string, record: TurnRecord, events: LoggedEvent[], state?: SessionStateWrite): Promise<void>;
  appendEvents(tenantId: string, sessionId: string, events: LoggedEvent[]): Promise<void>;
  /**
   * Kept events with seq > `afterSeq`, ascending, at most `limit`, and the highest seq the
   * retention has deleted (0 when none); undefined when the session is unknown or another tenant's.
   */
  readEvents(tenantId: string, sessionId: string, afterSeq: number, limit: number): Promise<{ events: LoggedEvent[]; prunedThrough: number } | undefined>;
  /** A stored session of the tenant (for re-attaching to one not live here); undefined when unknown. */
  findSession(tenantId: string, sessionId: string): Promise<StoredSession | undefined>;
  /** Stores the session's state (state row and changed message rows, atomically) outside a turn (register_tools, detach). */
  saveState(tenantId: string, sessionId: string, state: SessionStateWrite): Promise<void>;
  /** The session's stored message lists; undefined when unknown or another tenant's. */
  readMessages(tenantId: string, sessionId: string): Promise<StoredMessages | undefined>;
  /**
   * Takes over a live session whose owner is gone: ONE conditional update that succeeds only
   * while the session's node is still `fromNode` (compare-and-set), so exactly one node wins.
   */
  adoptSession(tenantId: string, sessionId: string, fromNode: string | undefined): Promise<boolean>;
  /** `abandoned`: an ending because nobody re-attached within the detach grace (REST `end_reason`). */
  setStatus(tenantId: string, sessionId: string, status: SessionStatus, endReason?: "abandoned"): Promise<void>;
  /** The session's stored turns in order; undefined when unknown or another tenant's. */
  listTurns(tenantId: string, sessionId: string): Promise<StoredTurn[] | undefined>;
  /** Marks the turns numbered `turns` rolled back and stores the state, atomically. */
  rollBackTurns(tenantId: string, sessionId: string, turns: readonly number[], state: SessionStateWrite): Promise<void>;
  /** Stores a new session (as `createSession`, owned by this node) holding copies of `turns`, and its state, atomically. */
  forkSession(
    session: {
      id: string;
      tenantId: string;
      environmentId: string;
      model: string;
      status?: "detached";
      title?: string;
      metadata?: Record<string, string>;
      budget?: Budget;
    },
    turns: readonly { record: TurnRecord; origin: TurnOrigin }[],
    state: SessionStateWrite,
  ): Promise<void>;
  putFeedback(tenantId: string, sessionId: string, messageId: string, rating: string): Promise<void>;
}

/** What the store knows of a session that this process does not run. */
export interface StoredSession {
  status: SessionStatus;
  /** Highest stored event seq. */
  lastSeq: number;
  /** The node that runs it; undefined when none. */
  nodeId?: string;
  /** Whether `nodeId` still heart-beats (a live session of another process is not adoptable). */
  ownerAlive: boolean;
  environmentId: string;
  /** Stored turns (the number of the last one, for a snapshot older than turn numbers). */
  turnCount?: number;
  /** The state row written at the last turn or detach (`decodeState`); absent for older sessions. */
  state?: string;
}

export interface SessionLogger {
  debug?(obj: object, msg?: string): void;
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
  /** Whether the session's model is offered the team tools (decided at start, kept for the session's life). */
  readonly teams: boolean;
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
  /** Server tools that change while the session lives (MCP servers'). */
  liveTools?: LiveTools;
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
  /** User messages that may wait in one session (queued, steers not yet seen, interrupts): ROZ_MAX_QUEUED_INPUTS. */
  maxWaitingInputs: number;
  log: SessionLogger;
  metrics: SessionMetrics;
  /** Encodes a kept response once: the same bytes go to the event log, the store and binary wires. */
  encodeEvent(event: SequencedEvent): Uint8Array;
  /** The delta event of bytes `encodeEvent` made of a delta (the memory log keeps deltas as bytes only); absent: it keeps their objects. */
  decodeDelta?: (bytes: Uint8Array) => SessionEvent | undefined;
  /** Kept responses a live session holds in memory for re-attaching; older ones come from the store. */
  memoryEvents: number;
  /** May this principal start another session now? (per-key rate limit) */
  allowSessionStart(principal: Principal): boolean;
  /** Team tools for sessions whose environment does not say (`ROZ_TEAMS_DEFAULT=on`); default off. */
  teamsDefault?: boolean;
  /** Adds server tools and end hooks to each started session (teams); none when absent. */
  extend?: (link: SessionLink) => SessionExtension;
  /** A stream that sends no `start` within this time ends with `invalid_argument` (default: never). */
  startTimeoutMs?: number;
  /** Traces each turn as an `invoke_agent` span (absent: tracing is off). */
  tracing?: Tracing;
  /** The budgets and spend counting of a session's model calls (§13); none: no limits, nothing counted. */
  spend?: (session: { tenantId: string; sessionId: string }) => SpendGate;
}
