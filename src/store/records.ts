/**
 * The shapes the store keeps and takes: entities, their inputs, paging. Times are epoch ms.
 */
import type { Budget, JsonObject, PermissionRule, Spent, TokenUsage, TurnRecord } from "../domain/index.ts";
import type { SessionEndReason } from "./end-reason.ts";

/** A tenant: the owner of keys, environments and sessions; every store call is scoped to one. */
export interface Tenant {
  id: string;
  name: string;
  createdAt: number;
}

/** An API key as stored: only the SHA-256 hash of the secret, never the secret. */
export interface ApiKey {
  id: string;
  tenantId: string;
  name: string;
  /** The first characters of the secret (e.g. `roz_sk_ABCD`), shown to humans to recognise it. */
  prefix: string;
  scopes: string[];
  createdAt: number;
  lastUsedAt?: number;
  revokedAt?: number;
  expiresAt?: number;
}

/** What `createKey` stores; the secret itself is never passed, only its hash. */
export interface NewApiKey {
  tenantId: string;
  name: string;
  prefix: string;
  /** Hex (or any stable text) SHA-256 of the full secret; unique over all keys. */
  hash: string;
  scopes: string[];
  expiresAt?: number;
}

/** Per-tenant session defaults: model, instructions, permission rules, tool settings. */
export interface Environment {
  id: string;
  tenantId: string;
  /** Unique per tenant. */
  name: string;
  /** Free-form classification (`default` unless set). */
  kind: string;
  /** `provider/model` used when a session names none. */
  defaultModel?: string;
  /** Added to the agent's base instructions. */
  instructions?: string;
  /** Rules enforced before the built-in defaults; first match wins. */
  permissions: PermissionRule[];
  /** Per-tool settings (timeouts, …); opaque to the store. */
  toolDefaults: JsonObject;
  /** Whether its sessions' models get the team tools; absent: the server default decides. */
  teamsEnabled?: boolean;
  /** What each of its sessions may spend over its life; absent: no limit. */
  budget?: Budget;
  /** At most one environment per tenant is the default. */
  isDefault: boolean;
  createdAt: number;
  updatedAt: number;
}

/** What `createEnvironment` takes; absent fields get their defaults (no rules, kind `default`). */
export interface NewEnvironment {
  name: string;
  kind?: string;
  defaultModel?: string;
  instructions?: string;
  permissions?: PermissionRule[];
  toolDefaults?: JsonObject;
  teamsEnabled?: boolean;
  budget?: Budget;
  /** When true, the tenant's previous default stops being the default (same transaction). */
  isDefault?: boolean;
}

/** Fields to change; `undefined` keeps a field, `null` clears an optional one. */
export interface EnvironmentPatch {
  name?: string;
  kind?: string;
  defaultModel?: string | null;
  instructions?: string | null;
  permissions?: PermissionRule[];
  toolDefaults?: JsonObject;
  teamsEnabled?: boolean | null;
  budget?: Budget | null;
  isDefault?: boolean;
}

/** Where a session is in its life; `active` and `detached` are the live ones. */
export type SessionStatus = "active" | "detached" | "completed" | "cancelled" | "error";

/** Statuses after which a session never runs again; entering one sets `endedAt`. */
export const terminalStatuses: readonly SessionStatus[] = ["completed", "cancelled", "error"];

/** A session as stored, with the totals of its stored turns. */
export interface Session {
  id: string;
  tenantId: string;
  environmentId: string;
  /** Resolved `provider/model` name. */
  model: string;
  status: SessionStatus;
  /** The server node that owns the live session (multi-node); absent in single-node use. */
  nodeId?: string;
  /** `StartSession.host_id`, when the client sent one. */
  hostId?: string;
  createdAt: number;
  updatedAt: number;
  endedAt?: number;
  /** Set once it has ended. */
  endReason?: SessionEndReason;
  /** Sum of the usage of every stored turn. */
  usage: TokenUsage;
  /** Sum of the cost of every stored turn, USD. */
  costUsd: number;
  /** The budget it was started with (`StartSession.budget`); its environment's applies too. */
  budget?: Budget;
  /** What its model calls spent over its life, its team workers' included (what its budgets count). */
  spent: Spent;
  /** Number of stored turns; turns are numbered 1..turnCount. */
  turnCount: number;
  /** Sum of `TurnRecord.compactions` over stored turns. */
  compactionCount: number;
  /** What people call it (start, or a patch); absent when never set. */
  title?: string;
  /** String labels (start, or a patch); `{}` when none. */
  metadata: Record<string, string>;
  /** Hidden from lists unless asked for. */
  archived: boolean;
}

/** A session with what re-attaching to it needs (see `getResumableSession`). */
export interface ResumableSession extends Session {
  lastEventSeq: number;
  eventsPrunedThrough: number;
  ownerAlive: boolean;
  state?: string;
}

/** What `createSession` takes; status defaults to `active`. */
export interface NewSession {
  /** A UUID chosen by the caller; generated when absent. */
  id?: string;
  environmentId: string;
  model: string;
  status?: SessionStatus;
  nodeId?: string;
  hostId?: string;
  title?: string;
  metadata?: Record<string, string>;
  budget?: Budget;
}

/** A status transition for `updateSessionStatus`. */
export interface SessionStatusChange {
  status: SessionStatus;
  /** Only change when the current status is one of these (compare-and-set); any when absent. */
  from?: readonly SessionStatus[];
  /** New owner node; unchanged when absent. */
  nodeId?: string;
  /**
   * For terminal statuses; defaults to the existing end time, else now. A non-terminal status
   * (a detached session re-attached) clears `endedAt`.
   */
  endedAt?: number;
  /** For terminal statuses, when it is not the status's `defaultEndReason`; the first one stored stays. */
  endReason?: SessionEndReason;
}

/** A stored turn: the agent's record plus its position (1-based) in the session. */
export interface StoredTurn extends TurnRecord {
  sessionId: string;
  seq: number;
  /** The turn's number (§11: every started turn counts); `seq` for turns stored before numbers were. */
  turn: number;
  rolledBack: boolean;
  /** For a turn copied into a fork: the session and turn it was copied from. */
  forkedFrom?: TurnOrigin;
}

/** Where a forked session's copied turn came from. */
export interface TurnOrigin {
  sessionId: string;
  turn: number;
}

/** A rating of one assistant message; one per (session, message), later ones replace it. */
export interface Feedback {
  sessionId: string;
  messageId: string;
  rating: string;
  comment?: string;
  createdAt: number;
  updatedAt: number;
}

/** What `putFeedback` takes. */
export interface NewFeedback {
  sessionId: string;
  messageId: string;
  rating: string;
  comment?: string;
}

/** One entry of a session's event log (a serialized `SessionResponse` or any bytes). */
export interface SessionEvent {
  seq: number;
  payload: Uint8Array;
  createdAt: number;
}

/** An event to append to a session's log. */
export interface NewSessionEvent {
  /** Assigned by the caller, strictly increasing per session; a repeat throws `conflict`. */
  seq: number;
  payload: Uint8Array;
}

/** How long the session event log is kept; `pruneEvents()` applies it. */
export interface EventRetention {
  /** Keep only the newest N events of each session (default 10000). */
  maxEventsPerSession?: number;
  /** Drop all events of a session this long after it ended (default 24 h). */
  keepAfterEndMs?: number;
}

/** A page of a list ordered newest first. */
export interface PageRequest {
  /** 1..500, default 50. */
  limit?: number;
  /** `nextCursor` of the previous page; absent or empty for the first page. */
  cursor?: string;
}

/** One page of items, newest first. */
export interface Page<T> {
  items: T[];
  /** Present when more items may follow. */
  nextCursor?: string;
}
