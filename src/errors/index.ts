export { type ErrorCode, httpStatusOf } from "./codes.ts";
export { httpStatusOfReason, reasons, type Reason } from "./registry.ts";
export { RozError, toRozError } from "./roz-error.ts";
