import type { ErrorCode } from "./codes.ts";
import { reasons, type Reason } from "./registry.ts";

/**
 * The one error type of the server: a registered `reason` (stable string), its `code`,
 * a client-safe `message`, and whether a retry may succeed. `cause` is for logs only
 * and never reaches a client.
 */
export class RozError extends Error {
  override readonly name = "RozError";
  readonly reason: Reason;
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(reason: Reason, message?: string, options?: { cause?: unknown; retryable?: boolean; details?: Record<string, unknown> }) {
    const entry = reasons[reason];
    super(message ?? entry.message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.code = entry.code;
    this.retryable = options?.retryable ?? entry.retryable;
    this.details = options?.details;
  }
}

/**
 * Turns anything thrown into a RozError: a RozError as it is, anything else as `fallback`
 * (default `internal`) with the value as its cause.
 */
export function toRozError(err: unknown, fallback: Reason = "internal"): RozError {
  if (err instanceof RozError) return err;
  return new RozError(fallback, undefined, { cause: err });
}
