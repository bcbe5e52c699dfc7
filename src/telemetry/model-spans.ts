import { type Attributes, SpanKind, SpanStatusCode, type Tracer } from "@opentelemetry/api";
import { ATTR_ERROR_TYPE } from "@opentelemetry/semantic-conventions";
import {
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_INPUT_MESSAGES,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_SYSTEM_INSTRUCTIONS,
} from "@opentelemetry/semantic-conventions/incubating";
import {
  addUsage,
  emptyUsage,
  type FinishReason,
  type ModelAdapter,
  type ModelCatalog,
  type ModelEvent,
  ModelError,
  type ModelEventSink,
  type ModelRequest,
  pushEvents,
  streamOf,
  type TokenUsage,
  wrapAdapters,
} from "../models/index.ts";
import { inputMessages, outputMessage, systemInstructions } from "./content.ts";
import type { Scope } from "./scope.ts";
import { usageAttributes } from "./usage.ts";

/** What one call streamed, as far as its span needs: usage and finish always, the answer only with content. */
interface Seen {
  usage: TokenUsage;
  finish?: FinishReason;
  text: string;
  thinking: string;
  toolCalls: Record<string, unknown>[];
}

function see(seen: Seen, event: ModelEvent, captureContent: boolean): void {
  switch (event.type) {
    case "usage":
      seen.usage = addUsage(seen.usage, event.usage);
      return;
    case "finish":
      seen.finish = event.reason;
      return;
  }
  if (!captureContent) return;
  if (event.type === "text_delta") seen.text += event.text;
  else if (event.type === "thinking_delta") seen.thinking += event.text;
  else if (event.type === "tool_call") seen.toolCalls.push({ id: event.id, name: event.name, arguments: event.arguments });
}

/**
 * Every call of `adapter` as a `chat {model}` span (kind client) under the active span, with
 * the provider, the model, usage and finish reasons; a provider error sets the span's status,
 * a cancelled call does not. The events pass through unchanged, in one synchronous chain.
 */
function traceAdapter(adapter: ModelAdapter, tracer: Tracer, scope: Scope, captureContent: boolean): ModelAdapter {
  const streamTo = (request: ModelRequest, sink: ModelEventSink): Promise<void> => {
    const parent = scope.active();
    const attributes: Attributes = {
      [ATTR_GEN_AI_OPERATION_NAME]: "chat",
      [ATTR_GEN_AI_PROVIDER_NAME]: adapter.provider,
      [ATTR_GEN_AI_REQUEST_MODEL]: request.model,
    };
    const conversationId = scope.conversationOf(parent);
    if (conversationId !== undefined) attributes[ATTR_GEN_AI_CONVERSATION_ID] = conversationId;
    if (request.maxOutputTokens !== undefined) attributes[ATTR_GEN_AI_REQUEST_MAX_TOKENS] = request.maxOutputTokens;
    if (captureContent) {
      attributes[ATTR_GEN_AI_SYSTEM_INSTRUCTIONS] = systemInstructions(request.system);
      attributes[ATTR_GEN_AI_INPUT_MESSAGES] = inputMessages(request.messages);
    }
    const span = tracer.startSpan(`chat ${request.model}`, { kind: SpanKind.CLIENT, attributes }, parent);
    const seen: Seen = { usage: emptyUsage(), text: "", thinking: "", toolCalls: [] };
    const end = (): void => {
      span.setAttributes(usageAttributes(seen.usage));
      if (seen.finish !== undefined) {
        span.setAttribute(ATTR_GEN_AI_RESPONSE_FINISH_REASONS, [seen.finish]);
        if (captureContent) span.setAttribute(ATTR_GEN_AI_OUTPUT_MESSAGES, outputMessage(seen, seen.finish));
      }
      span.end();
    };
    return pushEvents(adapter, request, (event) => {
      see(seen, event, captureContent);
      sink(event);
    }).then(end, (error: unknown) => {
      if (!request.signal.aborted) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        span.setAttribute(ATTR_ERROR_TYPE, error instanceof ModelError && error.status !== undefined ? String(error.status) : "model_error");
      }
      end();
      throw error;
    });
  };
  return { provider: adapter.provider, stream: (request) => streamOf(streamTo, request), streamTo };
}

/** `catalog` whose resolved models' calls are traced (one wrapper per adapter). */
export function traceModels(catalog: ModelCatalog, tracer: Tracer, scope: Scope, captureContent: boolean): ModelCatalog {
  return wrapAdapters(catalog, (adapter) => traceAdapter(adapter, tracer, scope, captureContent));
}
