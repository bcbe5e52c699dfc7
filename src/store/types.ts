/**
 * The durable-state contract. One `Store` interface, implemented over SQLite
 * (`node:sqlite`) and PostgreSQL; both pass `test/store/conformance.ts`.
 *
 * Rules every method follows:
 * - Tenant scoping: methods that take a `tenantId` treat a row of another tenant exactly like
 *   an unknown id (`undefined` / `false`), never as an error.
 * - Times are epoch milliseconds.
 * - Lists are newest first (`createdAt` desc, `id` desc) and paged with an opaque cursor; a
 *   cursor that does not decode throws `RozError("invalid_argument", "invalid cursor")`.
 * - Unique-name / duplicate-id clashes throw `RozError("conflict")`.
 */
import type { TurnRecord } from "../domain/index.ts";
import type {
  ApiKey,
  Environment,
  EnvironmentPatch,
  Feedback,
  NewApiKey,
  NewEnvironment,
  NewFeedback,
  NewSession,
  NewSessionEvent,
  Page,
  PageRequest,
  ResumableSession,
  Session,
  SessionEvent,
  SessionStatusChange,
  StoredTurn,
  TurnOrigin,
  Tenant,
} from "./records.ts";
import type { McpServerStore } from "./mcp-server-records.ts";
import type { SpendStore } from "./spend-records.ts";
import type { MessageStore, SessionStateWrite } from "./message-rows.ts";
import type { TaskStore } from "./task-records.ts";
import type { SessionFilter, SessionPatch } from "./session-queries.ts";

export * from "./records.ts";
export * from "./task-records.ts";
export * from "./end-reason.ts";
export * from "./mcp-server-records.ts";
export * from "./message-rows.ts";
export * from "./session-queries.ts";
export * from "./spend-records.ts";

export interface TenantStore {
  /** Returns the tenant named `name`, creating it if needed; concurrent calls agree. */
  ensureTenant(name: string): Promise<Tenant>;
  getTenant(id: string): Promise<Tenant | undefined>;
  getTenantByName(name: string): Promise<Tenant | undefined>;
}

export interface KeyStore {
  /** Stores a new key; a hash already stored throws `conflict`. */
  createKey(input: NewApiKey): Promise<ApiKey>;
  /** The usable key with this hash and its tenant; undefined when unknown, revoked or expired at `now`. */
  findKeyByHash(hash: string, now?: number): Promise<{ key: ApiKey; tenant: Tenant } | undefined>;
  getKey(tenantId: string, id: string): Promise<ApiKey | undefined>;
  /** All keys of the tenant, revoked ones included. */
  listKeys(tenantId: string, page?: PageRequest): Promise<Page<ApiKey>>;
  /** Revokes a key (idempotent: the first revocation time is kept); false when unknown. */
  revokeKey(tenantId: string, id: string): Promise<boolean>;
  /**
   * Atomically revokes key `id` and creates its replacement with the same name, scopes and
   * expiry; undefined (and nothing changed) when `id` is unknown or already revoked.
   */
  rotateKey(tenantId: string, id: string, secret: { prefix: string; hash: string }): Promise<ApiKey | undefined>;
  /**
   * Keys ever created, revoked ones included: "no key exists yet" must not come back after
   * every key was revoked, or revoking would reopen an unauthenticated server.
   */
  countKeys(): Promise<number>;
  /** Records use; writes only when the stored time is a minute old or more, so per-request calls are cheap. */
  touchKey(id: string, at?: number): Promise<void>;
}

export interface EnvironmentStore {
  /** A name already used by the tenant throws `conflict`. */
  createEnvironment(tenantId: string, input: NewEnvironment): Promise<Environment>;
  getEnvironment(tenantId: string, id: string): Promise<Environment | undefined>;
  listEnvironments(tenantId: string, page?: PageRequest): Promise<Page<Environment>>;
  /** Undefined when unknown; a clashing name throws `conflict`. */
  updateEnvironment(tenantId: string, id: string, patch: EnvironmentPatch): Promise<Environment | undefined>;
  /** Sessions that used it keep their `environmentId`. */
  deleteEnvironment(tenantId: string, id: string): Promise<boolean>;
  /**
   * The tenant's default environment, created (named `default`, or `default-N` when that name
   * is taken) on first use. Concurrent calls, from any number of nodes, return the same one.
   */
  getDefaultEnvironment(tenantId: string): Promise<Environment>;
  /** The tenant's default environment if it exists; never creates one (a refused session start must create nothing). */
  findDefaultEnvironment(tenantId: string): Promise<Environment | undefined>;
}

export interface SessionStore {
  /** A duplicate `id` throws `conflict`. */
  createSession(tenantId: string, input: NewSession): Promise<Session>;
  getSession(tenantId: string, id: string): Promise<Session | undefined>;
  listSessions(tenantId: string, filter?: SessionFilter): Promise<Page<Session>>;
  /** The updated session; undefined when unknown or when `from` did not match. */
  updateSessionStatus(tenantId: string, id: string, change: SessionStatusChange): Promise<Session | undefined>;
  /**
   * The session with what re-attaching needs: its last event seq (also when retention deleted
   * the events), how far retention deleted its log, its state snapshot, and whether its node
   * heart-beat at or after `aliveSince`. Undefined when unknown or another tenant's.
   */
  getResumableSession(tenantId: string, id: string, aliveSince: number): Promise<ResumableSession | undefined>;
  /** Stores the session's state (its state row and changed message rows, in one transaction); false when unknown. */
  saveSessionState(tenantId: string, id: string, state: SessionStateWrite): Promise<boolean>;
  /**
   * Makes `toNode` the owner of a live session, in ONE conditional update that succeeds only
   * while its owner is still `fromNode` (undefined: none): of several nodes adopting the same
   * session at once exactly one gets true. The session becomes `detached` until attached.
   */
  adoptSession(tenantId: string, id: string, change: { fromNode: string | undefined; toNode: string }): Promise<boolean>;
  /**
   * Changes title, metadata (merged) and archived flag, and re-indexes the title, in one
   * transaction. Undefined when unknown; merged metadata over the pair limit throws
   * `invalid_argument` and changes nothing.
   */
  updateSession(tenantId: string, id: string, patch: SessionPatch): Promise<Session | undefined>;
  /**
   * Deletes at most `limit` ended sessions (completed, cancelled or error) that ended at or
   * before `endedBefore`, over all tenants, with their turns, tool calls, feedback, events, message rows and
   * search text. Returns how many sessions were deleted (fewer than `limit`: none are left).
   */
  deleteEndedSessions(endedBefore: number, limit: number): Promise<number>;
}

/** Named leases: one holder at a time does a cluster-wide chore. */
export interface LeaseStore {
  /**
   * Takes or renews lease `name` for `holder` until `now + ttlMs`; true when `holder` holds it
   * now, false while another holder's lease runs. Concurrent callers on any node: one wins.
   */
  acquireLease(name: string, holder: string, ttlMs: number, now?: number): Promise<boolean>;
  /** Gives the lease up if `holder` holds it. */
  releaseLease(name: string, holder: string): Promise<void>;
}

/** Server processes ("nodes") and their heartbeats. */
export interface NodeStore {
  /**
   * Registers the node or renews its heartbeat (and clears a previous stop). `process` is the
   * host and process id of a node with a generated id (kept from its first heartbeat).
   */
  heartbeatNode(id: string, now?: number, process?: NodeProcess): Promise<void>;
  /** Marks the node stopped (at `now`): its sessions may be adopted at once. */
  stopNode(id: string, now?: number): Promise<void>;
  /** The nodes of `host` with a process id that have not stopped, however old their heartbeat. */
  runningNodesOn(host: string): Promise<RunningNode[]>;
  /**
   * Hands the live sessions of an earlier run of node `id` (the same id, restarted) to nobody:
   * `detached`, no node, updated no earlier than that run's last sign of life. Returns how many.
   */
  releaseNodeSessions(id: string): Promise<number>;
  /**
   * Sessions nobody runs: a live session whose node is gone (unknown, stopped, or silent since
   * `aliveSince`) is `detached`; one of those untouched since `idleBefore`, whose node has been
   * gone since then too, ends `cancelled` with end reason `abandoned`. Each is one conditional
   * update, so nodes sweeping at once end every session once. Returns how many of each.
   */
  sweepOrphanedSessions(limits: { aliveSince: number; idleBefore: number }, now?: number): Promise<{ detached: number; ended: number }>;
}

/** Where a node's process runs (recorded for generated node ids only). */
export interface NodeProcess {
  host: string;
  pid: number;
}

/** A node that has not stopped, with its process. */
export interface RunningNode extends NodeProcess {
  id: string;
  heartbeatAt: number;
}

export interface TranscriptStore {
  /**
   * Stores a finished turn (cancelled and failed ones included) in ONE transaction: the turn,
   * its tool calls, the session's turn count, usage and compaction totals, and the session
   * events produced during the turn (`events`, optional). Returns the
   * turn's seq (1-based); undefined when the session is unknown. Nothing is stored on failure;
   * an event whose seq is already stored fails it with `conflict`, as in `appendEvents`.
   */
  appendTurn(
    tenantId: string,
    sessionId: string,
    record: TurnRecord,
    events?: readonly NewSessionEvent[],
    /** The session's state after the turn (state row and changed message rows), stored in the same write. */
    state?: SessionStateWrite,
  ): Promise<number | undefined>;
  /** Turns in order (seq ascending) after `afterSeq`; undefined when the session is unknown. */
  listTurns(tenantId: string, sessionId: string, range?: { afterSeq?: number; limit?: number }): Promise<StoredTurn[] | undefined>;
}

/** The writes that change which turns a model sees (§11 rollback and fork). */
export interface ConversationStore {
  /**
   * Marks the session's turns numbered `turns` rolled back and stores `state` (the session's
   * state after the rollback) in ONE transaction; false when the session is unknown.
   */
  rollBackTurns(tenantId: string, sessionId: string, turns: readonly number[], state?: SessionStateWrite): Promise<boolean>;
  /**
   * Creates a session (as `createSession`) holding copies of `turns` in order, each with its
   * record's number and marked with `origin`, and its `state`, in ONE transaction. Its turn
   * count is the number of copies; its usage starts at zero (the copied turns' was the source's).
   */
  forkSession(
    tenantId: string,
    input: NewSession & { id: string },
    turns: readonly { record: TurnRecord; origin: TurnOrigin }[],
    state: SessionStateWrite,
  ): Promise<Session>;
}

export interface FeedbackStore {
  /** Inserts or replaces the rating of one message (createdAt is kept); undefined when the session is unknown. */
  putFeedback(tenantId: string, input: NewFeedback): Promise<Feedback | undefined>;
  /** Feedback of a session, oldest first; undefined when the session is unknown. */
  listFeedback(tenantId: string, sessionId: string): Promise<Feedback[] | undefined>;
}

export interface EventStore {
  /** Appends a batch atomically; false when the session is unknown; a repeated seq throws `conflict`. */
  appendEvents(tenantId: string, sessionId: string, events: readonly NewSessionEvent[]): Promise<boolean>;
  /** Events with seq > `afterSeq`, ascending, at most `limit` (default 1000); undefined when the session is unknown. */
  readEvents(tenantId: string, sessionId: string, range?: { afterSeq?: number; limit?: number }): Promise<SessionEvent[] | undefined>;
  /** How far retention deleted the session's log (0 when never); undefined when the session is unknown. */
  eventsPrunedThrough(tenantId: string, sessionId: string): Promise<number | undefined>;
  /** Highest stored seq (0 when none, also after pruning everything); undefined when the session is unknown. */
  lastEventSeq(tenantId: string, sessionId: string): Promise<number | undefined>;
  /**
   * Applies the retention settings over all tenants: deletes events beyond the newest
   * `maxEventsPerSession` of each session, and all events of sessions that ended more than
   * `keepAfterEndMs` before `now`. Returns the number of deleted events. Callers run it
   * periodically; the store starts no timers.
   */
  pruneEvents(now?: number): Promise<number>;
}

/** Everything the server keeps. Safe for concurrent use by many async callers. */
export interface Store
  extends TenantStore,
    KeyStore,
    EnvironmentStore,
    SessionStore,
    MessageStore,
    TranscriptStore,
    ConversationStore,
    FeedbackStore,
    EventStore,
    TaskStore,
    NodeStore,
    LeaseStore,
    McpServerStore,
    SpendStore {
  /** `sqlite` or `postgres`. */
  readonly kind: "sqlite" | "postgres";
  /** Resolves when the database answers a trivial query (for `/readyz`); rejects otherwise. */
  ping(): Promise<void>;
  /** Waits for running operations, then releases the database; later calls reject. */
  close(): Promise<void>;
}
