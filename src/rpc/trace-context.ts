import type { TraceContext } from "../domain/index.ts";
import type { SessionCommand } from "../session/index.ts";

/** A header value fit to carry: W3C caps `tracestate` at 512 characters; a longer one (or a `traceparent` past that) is dropped. */
const MAX_TRACE_HEADER = 512;

/**
 * The W3C trace context of a call (gRPC metadata and Connect headers are HTTP headers alike),
 * undefined without a `traceparent`. Its syntax is checked where it is used: a malformed one
 * starts a new trace there.
 */
export function traceContextOf(headers: Headers): TraceContext | undefined {
  const traceparent = headers.get("traceparent");
  if (traceparent === null || traceparent.length > MAX_TRACE_HEADER) return undefined;
  const tracestate = headers.get("tracestate");
  return tracestate !== null && tracestate.length <= MAX_TRACE_HEADER ? { traceparent, tracestate } : { traceparent };
}

/** A user message carries its call's trace context: the turn it starts is traced as the client's child. */
export function withTrace(command: SessionCommand, trace: TraceContext | undefined): SessionCommand {
  return trace !== undefined && command.type === "user_message" && command.trace === undefined ? { ...command, trace } : command;
}
