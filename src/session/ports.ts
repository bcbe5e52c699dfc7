/**
 * What the session layer needs from the outside, as narrow interfaces. `src/app` wires
 * them to the store, the model catalog and the agent factory.
 */
import type { Agent, AgentLimits, AgentOptions, PermissionRule, TurnRecord } from "../agent/index.ts";
import type { ModelCatalog } from "../models/index.ts";
import type { SequencedEvent } from "./types.ts";

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
  /** Undefined when unknown or another tenant's. Empty id: the tenant's default environment. */
  resolveEnvironment(tenantId: string, environmentId: string): Promise<SessionEnvironment | undefined>;
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
  /** A stream that sends no `start` within this time ends with `invalid_argument` (default: never). */
  startTimeoutMs?: number;
}
