import { isSessionErrorCode, type RozError, type SessionErrorCode, sessionRetryable } from "../errors/index.ts";
import type { SessionEvent } from "./types.ts";

/** The §8 code for an error: session reasons as they are, others by their status code, else `internal`. */
function sessionErrorCode(error: RozError): SessionErrorCode {
  if (isSessionErrorCode(error.reason)) return error.reason;
  if (isSessionErrorCode(error.code)) return error.code;
  return "internal";
}

/** An error as its in-band `SessionError` fields, code and retryable flag both per §8 (the registry's `inBand`). */
export function sessionErrorOf(error: RozError): { code: SessionErrorCode; message: string; retryable: boolean } {
  const code = sessionErrorCode(error);
  return { code, message: error.message, retryable: sessionRetryable(code, error.retryable) };
}

/** A non-fatal in-band error of `code`; its `retryable` flag is the §8 table's. */
export function inBandError(code: SessionErrorCode, message: string): Extract<SessionEvent, { type: "session_error" }> {
  return { type: "session_error", code, message, retryable: sessionRetryable(code, false) };
}
