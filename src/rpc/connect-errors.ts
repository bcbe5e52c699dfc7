import { Code, ConnectError } from "@connectrpc/connect";
import { type ErrorCode, RozError } from "../errors/index.ts";
import { ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.js";

/** The metadata key (a trailer on gRPC and Connect streams, a header on Connect unary) naming the reason. */
export const reasonMetadataKey = "roz-error-reason";

/** `google.rpc.ErrorInfo.domain` of roz's reasons. */
export const errorDomain = "roz.dev";

const codes: Record<ErrorCode, Code> = {
  canceled: Code.Canceled,
  unknown: Code.Unknown,
  invalid_argument: Code.InvalidArgument,
  deadline_exceeded: Code.DeadlineExceeded,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  permission_denied: Code.PermissionDenied,
  resource_exhausted: Code.ResourceExhausted,
  failed_precondition: Code.FailedPrecondition,
  aborted: Code.Aborted,
  out_of_range: Code.OutOfRange,
  unimplemented: Code.Unimplemented,
  internal: Code.Internal,
  unavailable: Code.Unavailable,
  data_loss: Code.DataLoss,
  unauthenticated: Code.Unauthenticated,
};

/**
 * The gRPC status for a RozError, with its registry reason twice: in the `roz-error-reason`
 * metadata (readable by any client) and as the standard `google.rpc.ErrorInfo` detail. The
 * cause stays out of both.
 */
export function toConnectError(err: RozError): ConnectError {
  return new ConnectError(err.message, codes[err.code], { [reasonMetadataKey]: err.reason }, [
    { desc: ErrorInfoSchema, value: { reason: err.reason, domain: errorDomain } },
  ]);
}

/** Errors the Connect runtime raised while reading a request, as RozErrors. */
export function fromConnectError(err: unknown): RozError {
  if (err instanceof RozError) return err;
  const ce = ConnectError.from(err);
  switch (ce.code) {
    case Code.ResourceExhausted:
      return new RozError("message_too_large", ce.rawMessage);
    case Code.InvalidArgument:
      return new RozError("malformed_message", ce.rawMessage);
    case Code.Unauthenticated:
      return new RozError("unauthenticated", ce.rawMessage);
    case Code.Internal:
      // Connect reports an undecodable request message as INTERNAL ("parse binary: …"),
      // but the bytes are the client's fault.
      if (/^parse (binary|json)\b/.test(ce.rawMessage)) return new RozError("malformed_message", `malformed request message: ${ce.rawMessage}`);
      return new RozError("internal", undefined, { cause: err });
    default:
      return new RozError("internal", undefined, { cause: err });
  }
}
