import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Every failure the library reports: `code` is the server's reason (session-behaviour.md §8:
 * `not_found`, `events_expired`, `turn_in_progress`, …) or one of the library's own
 * (`reconnect_timeout`, `session_ended`, `dropped`, `closed`, `unsupported_transport`);
 * `retryable` says whether the same request may succeed later; `status` is the gRPC status
 * code (Connect's `Code`, the same numbers; 0 for an in-band error that ended no call).
 */
export class RozError extends Error {
  override readonly name = "RozError";
  readonly code: string;
  readonly retryable: boolean;
  readonly status: Code | 0;
  /** The request an in-band error answers: a message's `messageId` or a `toolCallId`. */
  readonly requestId: string;

  constructor(code: string, message: string, init: { retryable?: boolean; status?: Code | 0; requestId?: string; cause?: unknown } = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = code;
    this.retryable = init.retryable ?? false;
    this.status = init.status ?? 0;
    this.requestId = init.requestId ?? "";
  }
}

/** The reason a gRPC status stands for when the server named none (its §8 table read backwards). */
const reasonOfStatus: Partial<Record<Code, string>> = {
  [Code.Canceled]: "canceled",
  [Code.Unknown]: "unknown",
  [Code.InvalidArgument]: "invalid_argument",
  [Code.DeadlineExceeded]: "deadline_exceeded",
  [Code.NotFound]: "not_found",
  [Code.PermissionDenied]: "permission_denied",
  [Code.ResourceExhausted]: "resource_exhausted",
  [Code.FailedPrecondition]: "failed_precondition",
  [Code.OutOfRange]: "events_expired",
  [Code.Unimplemented]: "unimplemented",
  [Code.Internal]: "internal",
  [Code.Unavailable]: "unavailable",
  [Code.Unauthenticated]: "unauthenticated",
};

/** Statuses a broken transport (or a restarting server) ends a call with: worth trying again. */
const transient = new Set<Code>([Code.Unavailable, Code.Unknown, Code.Internal, Code.DeadlineExceeded, Code.Aborted, Code.Canceled]);

/** An in-band `SessionError` as the library reports it. */
export interface InBandError {
  code: string;
  message: string;
  retryable: boolean;
  requestId: string;
}

/**
 * What ended a call, as a RozError: the reason from the `roz-error-reason` metadata, else
 * from the in-band error that preceded the status (`inBand`), else the status's own.
 */
export function toRozError(err: unknown, inBand?: InBandError): RozError {
  if (err instanceof RozError) return err;
  const ce = ConnectError.from(err);
  const reason = ce.metadata.get("roz-error-reason") ?? inBand?.code ?? reasonOfStatus[ce.code] ?? "unknown";
  const retryable = inBand?.code === reason ? inBand.retryable || transient.has(ce.code) : transient.has(ce.code) || reason === "rate_limited";
  return new RozError(reason, inBand?.code === reason ? inBand.message : ce.rawMessage, { retryable, status: ce.code, cause: err });
}

/** A RozError for an in-band `SessionError` (no call ended). */
export const fromInBand = (e: InBandError): RozError => new RozError(e.code, e.message, { retryable: e.retryable, requestId: e.requestId });
