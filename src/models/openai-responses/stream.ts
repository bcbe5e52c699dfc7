/**
 * Responses stream events → our events. Text and refusals stream as text; reasoning
 * summaries (OpenAI) and raw reasoning text (open-weight models on vLLM/Ollama) stream as
 * thinking; function calls are emitted complete when their output item is done; usage and
 * the finish reason come from the terminal `response.completed` / `response.incomplete`.
 */
import type { ResponseStreamEvent, ResponseUsage } from "openai/resources/responses/responses";
import { streamFailure } from "../classify-error.ts";
import { ModelError } from "../model-error.ts";
import type { PayloadReader } from "../openai-model.ts";
import { generatedCallId, toolCallEvent } from "../tool-arguments.ts";
import type { FinishReason, ModelEventSink, TokenUsage } from "../types.ts";
import { reasoningSignature } from "./convert.ts";

interface PendingCall {
  callId: string;
  name: string;
  args: string;
}

/**
 * Reads one response's events (`read` per event, then `end`): pushes our events in stream
 * order, then at the end `usage` and `finish` once the response is complete. A failed
 * response is a ModelError (retryable unless its code says otherwise); a stream that ends
 * without a terminal event was cut short (retryable ModelError), thrown by `end`.
 */
export class ResponsesEventReader implements PayloadReader<ResponseStreamEvent> {
  readonly #calls = new Map<string, PendingCall>();
  #toolCalls = 0;
  /** `${item}:${summary_index}` of the last thinking delta. */
  #lastSummary: string | undefined;
  #terminal: { usage: ResponseUsage | null | undefined; reason: FinishReason | undefined } | undefined;
  /** The model answered with a `refusal` content part (the response still completes). */
  #refused = false;

  read(event: ResponseStreamEvent, sink: ModelEventSink): void {
    const calls = this.#calls;
    switch (event.type) {
      case "response.refusal.delta":
        this.#refused = true;
        sink({ type: "text_delta", text: event.delta });
        break;
      case "response.output_text.delta":
        sink({ type: "text_delta", text: event.delta });
        break;
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta": {
        const index = event.type === "response.reasoning_summary_text.delta" ? event.summary_index : event.content_index;
        const key = `${event.item_id}:${index}`;
        // Summary parts are separate paragraphs; keep them apart in the joined thinking.
        const last = this.#lastSummary;
        const separator = last !== undefined && last !== key && last.startsWith(`${event.item_id}:`);
        this.#lastSummary = key;
        sink({ type: "thinking_delta", text: separator ? `\n\n${event.delta}` : event.delta });
        break;
      }
      case "response.output_item.added":
        if (event.item.type === "function_call") {
          calls.set(event.item.id ?? event.item.call_id, {
            callId: event.item.call_id,
            name: event.item.name,
            args: event.item.arguments ?? "",
          });
        }
        break;
      case "response.function_call_arguments.delta": {
        const call = calls.get(event.item_id);
        if (call) call.args += event.delta;
        break;
      }
      case "response.function_call_arguments.done": {
        const call = calls.get(event.item_id);
        if (call) call.args = event.arguments;
        break;
      }
      case "response.output_item.done": {
        const item = event.item;
        if (item.type === "function_call") {
          const pending = calls.get(item.id ?? item.call_id);
          this.#toolCalls++;
          sink(toolCallEvent(item.call_id || pending?.callId || generatedCallId(), item.name || pending?.name || "", item.arguments || pending?.args || ""));
        } else if (item.type === "reasoning" && item.encrypted_content) {
          sink({ type: "thinking_delta", text: "", signature: reasoningSignature(item.id, item.encrypted_content) });
        }
        break;
      }
      case "response.completed":
        this.#terminal = { usage: event.response.usage, reason: undefined };
        break;
      case "response.incomplete": {
        const why = event.response.incomplete_details?.reason;
        this.#terminal = { usage: event.response.usage, reason: why === "content_filter" ? "content_filter" : "max_tokens" };
        break;
      }
      case "response.failed": {
        const error = event.response.error;
        throw streamFailure(error?.message ?? "the response failed", error?.code);
      }
      case "error":
        throw streamFailure(event.message, event.code);
      default:
        break; // lifecycle and hosted-tool events carry nothing we report
    }
  }

  end(sink: ModelEventSink): void {
    const terminal = this.#terminal;
    if (!terminal) throw new ModelError("the model stream ended before the response was complete", { retryable: true });
    if (terminal.usage) sink({ type: "usage", usage: toUsage(terminal.usage) });
    const refused = this.#refused ? "content_filter" : undefined;
    sink({ type: "finish", reason: terminal.reason ?? refused ?? (this.#toolCalls > 0 ? "tool_use" : "end_turn") });
  }
}

function toUsage(usage: ResponseUsage): TokenUsage {
  return {
    inputTokens: usage.input_tokens ?? 0,
    outputTokens: usage.output_tokens ?? 0,
    cacheReadTokens: usage.input_tokens_details?.cached_tokens ?? 0,
    cacheCreationTokens: 0,
  };
}
