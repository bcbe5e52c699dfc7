import type { RozError } from "../errors/index.ts";
import type { SessionErrorCode } from "./types.ts";

/**
 * session-behaviour.md §8, the "retryable" column: fixed for every code except
 * `model_error` and `agent_error`, whose flag comes from their cause.
 */
const retryableByCode: Record<SessionErrorCode, boolean | undefined> = {
  unauthenticated: false,
  invalid_argument: false,
  not_found: false,
  model_unavailable: false,
  already_started: false,
  no_session: false,
  turn_in_progress: false,
  no_active_turn: false,
  unknown_tool_call: false,
  model_error: undefined,
  agent_error: undefined,
  resource_exhausted: true,
  internal: true,
  events_expired: false,
  interrupted: true,
};

const isSessionCode = (s: string): s is SessionErrorCode => Object.hasOwn(retryableByCode, s);

/** The §8 `retryable` flag of `code`; `fallback` (the cause's) where the table says "per cause". */
export function retryableOf(code: SessionErrorCode, fallback: boolean): boolean {
  return retryableByCode[code] ?? fallback;
}

/** The §8 code for an error: session reasons as they are, others by their status code, else `internal`. */
function sessionErrorCode(error: RozError): SessionErrorCode {
  if (isSessionCode(error.reason)) return error.reason;
  if (isSessionCode(error.code)) return error.code;
  return "internal";
}

/** An error as its in-band `SessionError` fields, code and retryable flag both per §8. */
export function sessionErrorOf(error: RozError): { code: SessionErrorCode; message: string; retryable: boolean } {
  const code = sessionErrorCode(error);
  return { code, message: error.message, retryable: retryableOf(code, error.retryable) };
}
