import Anthropic from "@anthropic-ai/sdk";
import { defaultIdleTimeoutMs } from "../openai-client.ts";
import { streamOf } from "../push.ts";
import { retrying, type RetryOptions } from "../retry.ts";
import { openSse } from "../sse.ts";
import type { FinishReason, ModelAdapter, ModelEvent, ModelEventSink, ModelRequest } from "../types.ts";
import { thinkingSignature, toAnthropicRequest, type AnthropicConvertOptions } from "./convert.ts";
import { type MessageEnd, MessageEventReader } from "./stream.ts";

/** What an Anthropic provider is built from. */
export interface AnthropicModelOptions {
  /** Provider name reported by the adapter, e.g. `anthropic`. */
  provider: string;
  /** Sent as `x-api-key`. */
  apiKey?: string;
  /** Undefined means `https://api.anthropic.com`. */
  baseURL?: string;
  headers?: Record<string, string>;
  supportsImages: boolean;
  /** Extended thinking budget (tokens, at least 1024 for the API); 0/undefined: off. */
  thinkingBudget?: number;
  retry?: RetryOptions;
  /** Longest silence tolerated from the provider (headers, and between two events). */
  idleTimeoutMs?: number;
  fetch?: typeof fetch;
}

/** `max_tokens` when the session sets no output limit (the API requires one; every current model takes it). */
export const anthropicDefaultMaxTokens = 8192;
/** Model used when provider `anthropic` is the default and nothing else was chosen. */
export const anthropicDefaultModel = "claude-sonnet-4-5";
/** `pause_turn` continuations within one call before the pause is taken as the end. */
const maxContinuations = 8;

type Event = Anthropic.RawMessageStreamEvent;

/**
 * A provider spoken to through Anthropic's Messages API (`POST {baseURL}/v1/messages`,
 * `stream: true`) with the official SDK, which sends the request (auth, version header,
 * error statuses) while our SSE parser reads the stream (src/models/sse.ts: the SDK's own
 * decoding costs more per event than everything else a session does with a delta).
 *
 * One call of `stream` is one model call of the agent: a `pause_turn` is continued here
 * (the paused content sent back as the assistant's, the API called again) so the caller
 * sees one response. Each request is retried per `retry.ts` until its first event.
 */
export class AnthropicModel implements ModelAdapter {
  readonly provider: string;
  readonly #client: Anthropic;
  readonly #convert: AnthropicConvertOptions;
  readonly #idle: { idleMs: number };
  readonly #retry: RetryOptions;

  constructor(options: AnthropicModelOptions) {
    this.provider = options.provider;
    this.#idle = { idleMs: options.idleTimeoutMs ?? defaultIdleTimeoutMs };
    this.#retry = options.retry ?? {};
    this.#convert = {
      supportsImages: options.supportsImages,
      defaultMaxTokens: anthropicDefaultMaxTokens,
      ...(options.thinkingBudget ? { thinkingBudget: options.thinkingBudget } : {}),
    };
    // Nothing from the environment implicitly (key, base URL, profiles, telemetry), and no
    // SDK retries: ours in retry.ts know when output has started.
    this.#client = new Anthropic({
      apiKey: options.apiKey || "unused",
      baseURL: options.baseURL ?? "https://api.anthropic.com",
      webhookKey: null,
      maxRetries: 0,
      timeout: this.#idle.idleMs,
      openTelemetry: false,
      ...(options.headers ? { defaultHeaders: options.headers } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  /** See `ModelAdapter.stream`. */
  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    return streamOf((r, sink) => this.streamTo(r, sink), request);
  }

  /** See `ModelAdapter.streamTo`. */
  async streamTo(request: ModelRequest, sink: ModelEventSink): Promise<void> {
    let content: Anthropic.ContentBlockParam[] = [];
    for (let round = 0; ; round++) {
      const outcome: { end?: MessageEnd } = {};
      const continuation = content;
      // Usage goes out as the provider reports it (also before a cut); it is not output, so a
      // failure after message_start may still be retried.
      await retrying(
        (into) => this.#attempt(request, continuation, outcome, into),
        request.signal,
        this.#retry,
        sink,
        (e) => e.type !== "usage",
      );
      const end = outcome.end!;
      content = [...content, ...end.content];
      if (end.stopReason === "pause_turn" && round < maxContinuations) continue;
      const signature = thinkingSignature(
        content.filter(
          (b): b is Anthropic.ThinkingBlockParam | Anthropic.RedactedThinkingBlockParam => b.type === "thinking" || b.type === "redacted_thinking",
        ),
      );
      if (signature !== undefined) sink({ type: "thinking_delta", text: "", signature });
      sink({
        type: "finish",
        reason: finishReason(
          end.stopReason,
          content.some((b) => b.type === "tool_use"),
        ),
      });
      return;
    }
  }

  async #attempt(request: ModelRequest, continuation: Anthropic.ContentBlockParam[], outcome: { end?: MessageEnd }, sink: ModelEventSink): Promise<void> {
    const body = toAnthropicRequest(request, this.#convert, continuation);
    const stream = await openSse<Event>(request.signal, (signal) => this.#client.messages.create(body, { signal }));
    const reader = new MessageEventReader();
    await stream.read((event) => reader.read(event, sink), this.#idle);
    outcome.end = reader.end();
  }
}

/**
 * The API's stop reason → ours. `refusal` is `content_filter` (the turn ends as `end_turn`,
 * with an activity note); `stop_sequence` is a normal end; a full context window is a cut.
 */
export function finishReason(stopReason: string, hasToolUse: boolean): FinishReason {
  switch (stopReason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "max_tokens";
    case "refusal":
      return "content_filter";
    case "tool_use":
      return "tool_use";
    default:
      // end_turn, stop_sequence, a pause_turn past the continuation cap
      return hasToolUse ? "tool_use" : "end_turn";
  }
}
