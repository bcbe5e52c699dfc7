export { type ErrorCode, httpStatusOf } from "./codes.ts";
export { errorBody } from "./error-body.ts";
export {
  httpStatusOfReason,
  isReason,
  isSessionErrorCode,
  type ReasonEntry,
  reasons,
  type Reason,
  type SessionErrorCode,
  sessionRetryable,
} from "./registry.ts";
export { RozError, toRozError } from "./roz-error.ts";
