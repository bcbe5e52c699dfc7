import { type ErrorCode, httpStatusOf } from "./codes.ts";

/**
 * Every reason the server can report, with its code, whether a retry may succeed,
 * and the default message. Reasons are stable strings clients may match on: never
 * reuse or rename one. The README lists them; `test/errors.test.ts` keeps both in step.
 *
 * Session reasons (`no_session`, `turn_in_progress`, …) are the in-band
 * `SessionError.code` strings of session-behaviour.md §8.
 */
export const reasons = {
  // session-behaviour.md §8 (in-band SessionError codes)
  unauthenticated: { code: "unauthenticated", retryable: false, message: "missing or invalid credentials" },
  invalid_argument: { code: "invalid_argument", retryable: false, message: "invalid argument" },
  not_found: { code: "not_found", retryable: false, message: "not found" },
  model_unavailable: { code: "failed_precondition", retryable: false, message: "model is not available", http: 422 },
  already_started: { code: "failed_precondition", retryable: false, message: "session already started" },
  no_session: { code: "failed_precondition", retryable: false, message: "no session: send start first" },
  turn_in_progress: { code: "failed_precondition", retryable: false, message: "a turn is already running" },
  no_active_turn: { code: "failed_precondition", retryable: false, message: "no turn is running" },
  unknown_tool_call: { code: "not_found", retryable: false, message: "unknown tool call id" },
  model_error: { code: "unavailable", retryable: true, message: "model provider error" },
  agent_error: { code: "internal", retryable: false, message: "agent error" },
  resource_exhausted: { code: "resource_exhausted", retryable: true, message: "limit exceeded" },
  internal: { code: "internal", retryable: true, message: "internal error" },
  events_expired: { code: "out_of_range", retryable: false, message: "the events after this seq are no longer kept" },
  interrupted: { code: "unavailable", retryable: true, message: "the turn was interrupted by a server restart" },
  session_ended: { code: "failed_precondition", retryable: false, message: "the session has ended" },
  // transport and REST
  permission_denied: { code: "permission_denied", retryable: false, message: "the key lacks the required scope" },
  message_too_large: { code: "resource_exhausted", retryable: false, message: "message exceeds the size limit", http: 413 },
  malformed_message: { code: "invalid_argument", retryable: false, message: "malformed message" },
  payload_too_large: { code: "resource_exhausted", retryable: false, message: "request body exceeds the size limit", http: 413 },
  unsupported_media_type: { code: "invalid_argument", retryable: false, message: "unsupported content type", http: 415 },
  rate_limited: { code: "resource_exhausted", retryable: true, message: "rate limit exceeded" },
  route_not_found: { code: "not_found", retryable: false, message: "no such route" },
  conflict: { code: "already_exists", retryable: false, message: "conflict" },
  unavailable: { code: "unavailable", retryable: true, message: "service unavailable" },
  shutting_down: { code: "unavailable", retryable: true, message: "server is shutting down" },
  config_invalid: { code: "invalid_argument", retryable: false, message: "invalid configuration" },
} as const satisfies Record<string, { code: ErrorCode; retryable: boolean; message: string; http?: number }>;

export type Reason = keyof typeof reasons;

/** The REST status of a reason: its code's, unless the reason names a more precise one. */
export function httpStatusOfReason(reason: Reason): number {
  const entry: { code: ErrorCode; http?: number } = reasons[reason];
  return entry.http ?? httpStatusOf[entry.code];
}
