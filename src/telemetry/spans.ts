import { type Attributes, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer, defaultTextMapGetter } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  ATTR_GEN_AI_AGENT_ID,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
} from "@opentelemetry/semantic-conventions/incubating";
import { ATTR_ERROR_TYPE } from "@opentelemetry/semantic-conventions";
import type { ToolCallRecord, ToolSpan, ToolSpanStart, Tracing, TurnRecord, TurnSpan, TurnSpanStart } from "../domain/index.ts";
import { outputMessage, userMessage } from "./content.ts";
import type { Scope } from "./scope.ts";
import { usageAttributes } from "./usage.ts";

/**
 * The `invoke_agent` span of each turn and the `execute_tool {name}` span of each tool call,
 * with the GenAI attributes. A turn's span is the child of the client's `traceparent` when it
 * sent one (a malformed one starts a new trace), else of the active span (a worker's of its
 * spawner's tool call). Content only when `captureContent`.
 */
export function createTracing(tracer: Tracer, scope: Scope, captureContent: boolean): Tracing {
  const propagator = new W3CTraceContextPropagator();
  return {
    startTurn(start: TurnSpanStart): TurnSpan {
      const parent = start.parent ? propagator.extract(ROOT_CONTEXT, start.parent, defaultTextMapGetter) : scope.active();
      const slash = start.model.indexOf("/");
      const attributes: Attributes = {
        [ATTR_GEN_AI_OPERATION_NAME]: "invoke_agent",
        [ATTR_GEN_AI_PROVIDER_NAME]: slash > 0 ? start.model.slice(0, slash) : start.model,
        [ATTR_GEN_AI_REQUEST_MODEL]: slash > 0 ? start.model.slice(slash + 1) : start.model,
        [ATTR_GEN_AI_CONVERSATION_ID]: start.conversationId,
      };
      if (start.agentId !== undefined) attributes[ATTR_GEN_AI_AGENT_ID] = start.agentId;
      if (captureContent) attributes[ATTR_GEN_AI_INPUT_MESSAGES] = userMessage(start.input);
      const span = tracer.startSpan("invoke_agent", { kind: SpanKind.INTERNAL, attributes }, parent);
      const context = scope.child(parent, span, start.conversationId);
      return {
        run: (fn) => scope.run(context, fn),
        end: (record) => endTurn(span, record, captureContent),
      };
    },

    startTool(start: ToolSpanStart): ToolSpan {
      const parent = scope.active();
      const attributes: Attributes = {
        [ATTR_GEN_AI_OPERATION_NAME]: "execute_tool",
        [ATTR_GEN_AI_TOOL_NAME]: start.name,
        [ATTR_GEN_AI_TOOL_CALL_ID]: start.callId,
        // GenAI's tool types: `function` runs on the client, `extension` on the agent's side.
        [ATTR_GEN_AI_TOOL_TYPE]: start.onServer ? "extension" : "function",
      };
      const conversationId = scope.conversationOf(parent);
      if (conversationId !== undefined) attributes[ATTR_GEN_AI_CONVERSATION_ID] = conversationId;
      if (captureContent) attributes[ATTR_GEN_AI_TOOL_CALL_ARGUMENTS] = JSON.stringify(start.arguments);
      const span = tracer.startSpan(`execute_tool ${start.name}`, { kind: SpanKind.INTERNAL, attributes }, parent);
      const context = scope.child(parent, span);
      return {
        run: (fn) => scope.run(context, fn),
        end: (record) => endTool(span, record, captureContent),
      };
    },
  };
}

function endTurn(span: Span, record: TurnRecord | undefined, captureContent: boolean): void {
  if (record === undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: "the turn failed outside the agent loop" });
    span.setAttribute(ATTR_ERROR_TYPE, "internal");
    span.end();
    return;
  }
  span.setAttributes({ ...usageAttributes(record.usage), "roz.turn.stop_reason": record.stopReason });
  if (record.turn !== undefined) span.setAttribute("roz.turn.number", record.turn);
  if (record.error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: record.error.message });
    span.setAttribute(ATTR_ERROR_TYPE, record.error.code);
  }
  if (captureContent) span.setAttribute(ATTR_GEN_AI_OUTPUT_MESSAGES, outputMessage({ text: record.assistantText }, record.stopReason));
  span.end();
}

/** Why a call failed as `error.type`: the tool's own failure, or roz's reason. */
function errorTypeOf(record: ToolCallRecord): string {
  if (record.error === undefined) return "tool_error";
  if (record.error === "cancelled") return "cancelled";
  return record.error.startsWith("tool timeout") ? "timeout" : "_OTHER";
}

function endTool(span: Span, record: ToolCallRecord, captureContent: boolean): void {
  const outcome = record.outcome;
  if (outcome?.success !== true) {
    // roz's reasons (timeout, cancelled) are no content; a failing tool's own text is.
    span.setStatus({ code: SpanStatusCode.ERROR, message: record.error ?? "the tool reported a failure" });
    span.setAttribute(ATTR_ERROR_TYPE, errorTypeOf(record));
  }
  if (captureContent && outcome !== undefined) span.setAttribute(ATTR_GEN_AI_TOOL_CALL_RESULT, outcome.result);
  span.end();
}
