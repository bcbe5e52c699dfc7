import { type ErrorCode, httpStatusOf } from "./codes.ts";

/**
 * Every reason the server can report, with its code, whether a retry may succeed,
 * and the default message. Reasons are stable strings clients may match on: never
 * reuse or rename one. The README lists them; `test/errors.test.ts` keeps both in step.
 *
 * `inBand` marks the in-band `SessionError.code` strings of session-behaviour.md §8 and
 * their `retryable` rule there: `"fixed"` (always this entry's `retryable`) or
 * `"per_cause"` (the error's own flag, e.g. a provider's 429 vs 400). Adding a session
 * code is one entry with `inBand`; `SessionErrorCode` follows from it.
 */
export const reasons = {
  // session-behaviour.md §8 (in-band SessionError codes)
  unauthenticated: { code: "unauthenticated", retryable: false, inBand: "fixed", message: "missing or invalid credentials" },
  invalid_argument: { code: "invalid_argument", retryable: false, inBand: "fixed", message: "invalid argument" },
  not_found: { code: "not_found", retryable: false, inBand: "fixed", message: "not found" },
  model_unavailable: { code: "failed_precondition", retryable: false, inBand: "fixed", message: "model is not available", http: 422 },
  already_started: { code: "failed_precondition", retryable: false, inBand: "fixed", message: "session already started" },
  no_session: { code: "failed_precondition", retryable: false, inBand: "fixed", message: "no session: send start first" },
  turn_in_progress: { code: "failed_precondition", retryable: false, inBand: "fixed", message: "a turn is already running" },
  no_active_turn: { code: "failed_precondition", retryable: false, inBand: "fixed", message: "no turn is running" },
  unknown_tool_call: { code: "not_found", retryable: false, inBand: "fixed", message: "unknown tool call id" },
  model_error: { code: "unavailable", retryable: true, inBand: "per_cause", message: "model provider error" },
  agent_error: { code: "internal", retryable: false, inBand: "per_cause", message: "agent error" },
  resource_exhausted: { code: "resource_exhausted", retryable: true, inBand: "fixed", message: "limit exceeded" },
  internal: { code: "internal", retryable: true, inBand: "fixed", message: "internal error" },
  permission_denied: { code: "permission_denied", retryable: false, inBand: "fixed", message: "the key lacks the required scope" },
  events_expired: { code: "out_of_range", retryable: false, inBand: "fixed", message: "the events after this seq are no longer kept" },
  interrupted: { code: "unavailable", retryable: true, inBand: "fixed", message: "the turn was interrupted by a server restart" },
  unavailable: { code: "unavailable", retryable: true, inBand: "fixed", message: "service unavailable" },
  budget_exceeded: { code: "resource_exhausted", retryable: false, inBand: "fixed", message: "a session or tenant budget is spent" },
  // transport and REST
  message_too_large: { code: "resource_exhausted", retryable: false, message: "message exceeds the size limit", http: 413 },
  malformed_message: { code: "invalid_argument", retryable: false, message: "malformed message" },
  payload_too_large: { code: "resource_exhausted", retryable: false, message: "request body exceeds the size limit", http: 413 },
  unsupported_media_type: { code: "invalid_argument", retryable: false, message: "unsupported content type", http: 415 },
  rate_limited: { code: "resource_exhausted", retryable: true, message: "rate limit exceeded" },
  route_not_found: { code: "not_found", retryable: false, message: "no such route" },
  conflict: { code: "already_exists", retryable: false, message: "conflict" },

  shutting_down: { code: "unavailable", retryable: true, message: "server is shutting down" },
  config_invalid: { code: "invalid_argument", retryable: false, message: "invalid configuration" },
  startup_failed: { code: "unavailable", retryable: true, message: "the server could not start" },
  session_ended: { code: "failed_precondition", retryable: false, message: "the session has ended" },
  // teams
  task_worker_limit: { code: "resource_exhausted", retryable: false, message: "the task has as many workers as allowed", http: 409 },
  tenant_worker_limit: { code: "resource_exhausted", retryable: true, message: "too many workers running for this tenant" },
  spawn_depth_limit: { code: "resource_exhausted", retryable: false, message: "workers at this depth may not spawn workers", http: 409 },
  uri_too_long: { code: "invalid_argument", retryable: false, message: "the request URI or a path parameter is too long", http: 414 },
  headers_too_large: { code: "invalid_argument", retryable: false, message: "request headers are too large", http: 431 },
  request_timeout: { code: "deadline_exceeded", retryable: true, message: "the request headers did not arrive in time", http: 408 },
  // MCP servers
  secret_key_missing: { code: "failed_precondition", retryable: false, message: "credentials cannot be stored: the server has no ROZ_SECRET_KEY" },
  mcp_oauth_failed: {
    code: "failed_precondition",
    retryable: false,
    message: "the MCP server's OAuth authorization server could not be used",
    http: 502,
  },
  mcp_oauth_denied: { code: "permission_denied", retryable: false, message: "the authorization server did not grant access to the MCP server" },
  mcp_oauth_state_invalid: { code: "invalid_argument", retryable: false, message: "unknown or already used OAuth state" },
  mcp_oauth_state_expired: { code: "failed_precondition", retryable: false, message: "the OAuth authorization expired: register the server again", http: 410 },
} as const satisfies Record<string, ReasonEntry>;

/** One registry entry: see `reasons`. */
export interface ReasonEntry {
  code: ErrorCode;
  retryable: boolean;
  /** An in-band §8 session code, and where its `retryable` flag comes from. */
  inBand?: "fixed" | "per_cause";
  message: string;
  /** A REST status more precise than the code's. */
  http?: number;
}

export type Reason = keyof typeof reasons;

/** The in-band `SessionError.code` strings (session-behaviour.md §8): the reasons marked `inBand`. */
export type SessionErrorCode = { [R in Reason]: (typeof reasons)[R] extends { inBand: string } ? R : never }[Reason];

/** Whether `value` is one of the registry's reasons (a reason that came over a wire). */
export function isReason(value: unknown): value is Reason {
  return typeof value === "string" && Object.hasOwn(reasons, value);
}

/** Whether `s` is an in-band session code. */
export function isSessionErrorCode(s: string): s is SessionErrorCode {
  return isReason(s) && (reasons[s] as ReasonEntry).inBand !== undefined;
}

/** The §8 `retryable` flag of `code`: the registry's, or `cause` (the error's own) where the rule is per cause. */
export function sessionRetryable(code: SessionErrorCode, cause: boolean): boolean {
  const entry: ReasonEntry = reasons[code];
  return entry.inBand === "per_cause" ? cause : entry.retryable;
}

/** The REST status of a reason: its code's, unless the reason names a more precise one. */
export function httpStatusOfReason(reason: Reason): number {
  const entry: ReasonEntry = reasons[reason];
  return entry.http ?? httpStatusOf[entry.code];
}
