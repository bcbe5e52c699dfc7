/**
 * The provider-agnostic model contract. Everything above `src/models` talks to a model
 * only through `ModelAdapter.stream`; a non-streaming answer is the collected stream.
 */

import type { JsonObject, ModelPrice, TokenUsage } from "../domain/index.ts";

// Shared records live in src/domain; re-exported here for the layers that import them from models.
export type { JsonObject, JsonValue, ModelPrice, TokenUsage } from "../domain/index.ts";
export { addUsage, budgetTokens, costOf, emptyUsage } from "../domain/index.ts";

export type ModelPart =
  | { type: "text"; text: string }
  /** Raw image bytes; providers that cannot take images get a text placeholder. */
  | { type: "image"; mediaType: string; data: Uint8Array }
  | { type: "tool_use"; id: string; name: string; input: JsonObject }
  | { type: "tool_result"; toolUseId: string; name: string; content: string; isError: boolean }
  | { type: "thinking"; thinking: string; signature?: string };

export interface ModelMessage {
  role: "user" | "assistant";
  parts: ModelPart[];
}

/** A tool the model may call; `parameters` is a JSON Schema object. */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonObject;
}

export interface ModelRequest {
  /** The provider's own model id (the part after `provider/`). */
  model: string;
  /** System blocks, in order; providers join or send them as they must. */
  system: string[];
  messages: ModelMessage[];
  tools: ToolDefinition[];
  maxOutputTokens?: number;
  /** Aborting it cancels the HTTP request at once; the stream then throws an AbortError. */
  signal: AbortSignal;
}

/** `content_filter`: the model refused (Anthropic `stop_reason: refusal`, an OpenAI `refusal` part, a filtered response). */
export type FinishReason = "end_turn" | "tool_use" | "max_tokens" | "content_filter";

/**
 * What a model stream yields, in model order. Tool calls arrive complete (arguments
 * reassembled and parsed). `usage` may come once or several times (they add up);
 * `finish` comes last on success.
 */
export type ModelEvent =
  | { type: "text_delta"; text: string }
  | { type: "thinking_delta"; text: string; signature?: string }
  /**
   * A complete tool call. When the model's arguments were not a JSON object, `arguments`
   * is `{}` and `invalidArguments` holds the raw text, so the caller can tell the model.
   */
  | { type: "tool_call"; id: string; name: string; arguments: JsonObject; invalidArguments?: string }
  | { type: "usage"; usage: TokenUsage }
  | { type: "finish"; reason: FinishReason };

/** Receives a model call's events in order, as they are parsed. It must not throw. */
export type ModelEventSink = (event: ModelEvent) => void;

/** One provider's model endpoint. */
export interface ModelAdapter {
  /** Provider name, e.g. `openai`, `ollama`, `scripted`. */
  readonly provider: string;
  /**
   * Streams one model call. Throws `ModelError` for provider failures (after retries
   * where they were allowed) and an AbortError when `request.signal` aborts.
   */
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
  /**
   * The same call with its events pushed into `sink` as they are parsed (no promise per
   * event, see push.ts); resolves after the last one and rejects as `stream` would throw.
   * Optional: `pushEvents` falls back to iterating `stream`.
   */
  streamTo?(request: ModelRequest, sink: ModelEventSink): Promise<void>;
}

/** A model name resolved against the configured providers. */
export interface ResolvedModel {
  /** Canonical `provider/model` name, reported in `SessionStarted.model`. */
  name: string;
  /** The id passed as `ModelRequest.model`. */
  modelId: string;
  adapter: ModelAdapter;
  /** Whether the provider accepts image parts. */
  supportsImages: boolean;
  /** Context window in tokens where configured. */
  contextWindow?: number;
  /** What its tokens cost (the providers file's `prices`); absent: it costs 0. */
  price?: ModelPrice;
}

/** The configured providers and aliases; resolves model names without calling a model. */
export interface ModelCatalog {
  /** The model used when a session names none. */
  readonly defaultModel: string;
  /** True when only the `scripted` provider is configured (no real model; warn at startup). */
  readonly offline: boolean;
  /** Resolves `provider/model`, a bare alias (`fast`) or `provider/alias`; undefined when unknown. */
  resolve(name: string | undefined): ResolvedModel | undefined;
  /** Providers for logs and `/v1/version`-style listings. */
  providers(): { name: string; api: string; baseURL?: string; models: string[]; aliases: Record<string, string> }[];
}
