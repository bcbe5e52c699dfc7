/**
 * What the layers see of tracing: spans of turns and tool calls, nothing of OpenTelemetry.
 * `src/telemetry` implements it; without an OTLP endpoint there is no `Tracing` at all and
 * callers skip it with one null check.
 */
import type { JsonObject } from "./json.ts";
import type { ToolCallRecord, TurnRecord } from "./turn-record.ts";

/** A client's W3C trace context (`traceparent`, `tracestate`), as its request carried it. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** A started span. `run` makes it the active span of `fn` and of everything `fn` starts (log lines, child spans). */
export interface ActiveSpan {
  run<T>(fn: () => T): T;
}

export interface TurnSpanStart {
  /** The session's id (`gen_ai.conversation.id`). */
  conversationId: string;
  /** Canonical `provider/model`. */
  model: string;
  /** The user message (recorded only when message content is captured). */
  input: string;
  /** The client's span: the turn becomes its child. Absent: a child of the active span, if any. */
  parent?: TraceContext;
  /** Set for a team worker: its id. */
  agentId?: string;
}

/** The `invoke_agent` span of one turn; `end` takes the turn's record (usage, stop reason, error), none when the turn failed outside the agent. */
export interface TurnSpan extends ActiveSpan {
  end(record: TurnRecord | undefined): void;
}

export interface ToolSpanStart {
  name: string;
  callId: string;
  arguments: JsonObject;
  /** Run by the server (team and MCP tools) rather than sent to the client. */
  onServer: boolean;
}

/** The `execute_tool {name}` span of one tool call; `end` takes its record (the tool's outcome, or roz's reason: timeout, cancelled). */
export interface ToolSpan extends ActiveSpan {
  end(record: ToolCallRecord): void;
}

/** Starts spans under the active span (or the given parent). Never throws. */
export interface Tracing {
  startTurn(start: TurnSpanStart): TurnSpan;
  startTool(start: ToolSpanStart): ToolSpan;
}
