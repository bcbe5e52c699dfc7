/**
 * Chat Completions chunks → our events. Handles what OpenAI-compatible servers actually
 * send: tool-call deltas spread over chunks (reassembled per `index`, or per `id` where a
 * server reuses one index or omits it), reasoning as `reasoning_content` (vLLM, llama.cpp,
 * DeepSeek) or `reasoning` (Ollama, OpenRouter), usage in its own final chunk or repeated
 * cumulatively on every chunk, and `finish_reason: "stop"` even after tool calls.
 */
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import type { CompletionUsage } from "openai/resources/completions";
import { ModelError } from "../model-error.ts";
import type { PayloadReader } from "../openai-model.ts";
import { generatedCallId, toolCallEvent } from "../tool-arguments.ts";
import type { FinishReason, ModelEventSink, TokenUsage } from "../types.ts";

interface PendingCall {
  id: string;
  name: string;
  args: string;
}

/** Delta fields that compatible servers add beyond OpenAI's schema. */
interface ReasoningDelta {
  reasoning_content?: string | null;
  reasoning?: string | null;
}

/** Usage fields that some servers add beyond OpenAI's schema (DeepSeek). */
interface ExtraUsage {
  prompt_cache_hit_tokens?: number;
}

/**
 * Reads one response's chunks (`read` per chunk, then `end`): pushes text/thinking deltas
 * as they arrive, then at the end the complete tool calls (in index order), one `usage`
 * (the last one reported) and `finish`. A stream that ends without any `finish_reason` was
 * cut short: `end` throws a retryable ModelError (or it was an abort, which the caller
 * tells apart by its signal).
 */
export class ChatChunkReader implements PayloadReader<ChatCompletionChunk> {
  readonly #calls: PendingCall[] = [];
  readonly #callAtIndex = new Map<number, PendingCall>();
  #usage: CompletionUsage | undefined;
  #finish: string | undefined;
  /** The model answered with a refusal (it comes with `finish_reason: "stop"`). */
  #refused = false;

  read(chunk: ChatCompletionChunk, sink: ModelEventSink): void {
    if (chunk.usage) this.#usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return;
    const delta = (choice.delta ?? {}) as ChatCompletionChunk.Choice.Delta & ReasoningDelta;
    // Servers sending both fields send the same text twice; prefer the more specific one.
    const reasoning = delta.reasoning_content || delta.reasoning;
    if (reasoning) sink({ type: "thinking_delta", text: reasoning });
    if (delta.content) sink({ type: "text_delta", text: delta.content });
    if (delta.refusal) {
      this.#refused = true;
      sink({ type: "text_delta", text: delta.refusal });
    }
    if (delta.tool_calls) this.#toolDeltas(delta.tool_calls);
    if (choice.finish_reason) this.#finish = choice.finish_reason;
  }

  #toolDeltas(deltas: ChatCompletionChunk.Choice.Delta.ToolCall[]): void {
    deltas.forEach((toolDelta, position) => {
      const index = toolDelta.index ?? position;
      let call = this.#callAtIndex.get(index);
      if (!call || (toolDelta.id && call.id && toolDelta.id !== call.id)) {
        call = { id: "", name: "", args: "" };
        this.#calls.push(call);
        this.#callAtIndex.set(index, call);
      }
      if (toolDelta.id) call.id = toolDelta.id;
      if (toolDelta.function?.name) call.name += toolDelta.function.name;
      if (toolDelta.function?.arguments) call.args += toolDelta.function.arguments;
    });
  }

  end(sink: ModelEventSink): void {
    if (this.#finish === undefined) {
      throw new ModelError("the model stream ended before the response was complete", { retryable: true });
    }
    for (const call of this.#calls) sink(toolCallEvent(call.id || generatedCallId(), call.name, call.args));
    if (this.#usage) sink({ type: "usage", usage: toUsage(this.#usage) });
    sink({ type: "finish", reason: this.#refused ? "content_filter" : toFinishReason(this.#finish, this.#calls.length > 0) });
  }
}

function toFinishReason(reason: string, hasToolCalls: boolean): FinishReason {
  if (reason === "length") return "max_tokens";
  if (reason === "content_filter") return "content_filter";
  // Ollama and others say "stop" after tool calls; the calls are what matters.
  return hasToolCalls ? "tool_use" : "end_turn";
}

function toUsage(usage: CompletionUsage & ExtraUsage): TokenUsage {
  return {
    inputTokens: usage.prompt_tokens ?? 0,
    outputTokens: usage.completion_tokens ?? 0,
    cacheReadTokens: usage.prompt_tokens_details?.cached_tokens ?? usage.prompt_cache_hit_tokens ?? 0,
    cacheCreationTokens: usage.prompt_tokens_details?.cache_write_tokens ?? 0,
  };
}
