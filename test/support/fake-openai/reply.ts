/**
 * What a test plans for the next request to the fake server. One shape serves every API:
 * the server renders it as Chat Completions chunks, Responses events or Anthropic Messages
 * events depending on the endpoint that was called.
 */

/** A tool call the fake model makes. `arguments` as text is sent verbatim (even if invalid JSON). */
export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: string | Record<string, unknown>;
}

export interface FakeUsage {
  input?: number;
  output?: number;
  /** `prompt_tokens_details.cached_tokens` / `input_tokens_details.cached_tokens`. */
  cached?: number;
  reasoning?: number;
  /** Anthropic only: `cache_creation_input_tokens` (part of `input`). */
  cacheCreation?: number;
}

export interface FakeReply {
  // --- an HTTP error instead of a stream
  /** Answer with this status and an OpenAI-style JSON error body (no stream). */
  status?: number;
  /** `retry-after` header (seconds or an HTTP date) for an error status. */
  retryAfter?: number | string;
  /** Error message / code in the JSON error body. */
  message?: string;
  code?: string;

  // --- stream content, rendered per endpoint
  text?: string;
  reasoning?: string;
  /** Chat only: the delta field that carries reasoning (default `reasoning_content`). */
  reasoningField?: "reasoning_content" | "reasoning";
  /** Responses only: send reasoning as `reasoning_text` deltas (open-weight models) instead of summary deltas. */
  reasoningAsText?: boolean;
  /** Responses only: the reasoning item's `encrypted_content`. */
  encryptedReasoning?: string;
  /** Anthropic only: the thinking block's signature (default: one bound to its text, see fake-anthropic). */
  signature?: string;
  /** Anthropic only: a `redacted_thinking` block with this `data` after the thinking. */
  redactedThinking?: string;
  /** Anthropic only: the stop reason, overriding the one derived from `finish` and the tool calls. */
  anthropicStop?: "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "pause_turn" | "refusal";
  /**
   * The model refuses with this text: Chat `delta.refusal` pieces (finish `stop`), a Responses
   * `refusal` content part, Anthropic text with `stop_reason: refusal`.
   */
  refusal?: string;
  toolCalls?: FakeToolCall[];
  /** Chat only: send the deltas of several tool calls interleaved in the same chunks. */
  interleaveToolCalls?: boolean;
  /** Usage to report; default estimated from the request and reply sizes; `false`: none. */
  usage?: FakeUsage | false;
  /** Chat finish reason (Responses: `length` → incomplete/max_output_tokens, `content_filter` → incomplete). */
  finish?: "stop" | "length" | "tool_calls" | "content_filter";
  /** Characters per text/reasoning/arguments delta (default 4). */
  chunkSize?: number;
  /** Raw payloads sent as they are instead of rendering the fields above. */
  frames?: object[];

  // --- load generation (benchmarks)
  /** Stream this many text tokens (one delta each, "tok "), then finish. */
  tokens?: number;
  /** Tokens per second for `tokens`; absent: as fast as the socket takes them. */
  rate?: number;

  // --- failure injection
  /** Destroy the socket after this many frames (a stream cut mid-way). */
  cutAfter?: number;
  /** Stop sending after this many frames but keep the connection open (0: headers only). */
  stallAfter?: number;
  /** Shorthand for `stallAfter: 0`: headers, then nothing. */
  stall?: boolean;
  /** Pause between frames. */
  frameDelayMs?: number;
  /** Pause before sending the response headers. */
  headersDelayMs?: number;
}

/** `text` as deltas of `size` characters. */
export function splitText(text: string, size = 4): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** A tool call's arguments as the JSON text the API streams. */
export function argumentsJson(call: FakeToolCall): string {
  return typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments);
}

/** The usage to report for a reply (see `FakeReply.usage`). */
export function usageFor(reply: FakeReply, requestBody: unknown): Required<FakeUsage> | undefined {
  if (reply.usage === false) return undefined;
  const produced =
    (reply.text?.length ?? 0) + (reply.reasoning?.length ?? 0) + (reply.toolCalls ?? []).reduce((n, c) => n + argumentsJson(c).length + c.name.length, 0);
  return {
    input: reply.usage?.input ?? Math.ceil(JSON.stringify(requestBody ?? "").length / 4),
    output: reply.usage?.output ?? reply.tokens ?? Math.ceil(produced / 4),
    cached: reply.usage?.cached ?? 0,
    cacheCreation: reply.usage?.cacheCreation ?? 0,
    reasoning: reply.usage?.reasoning ?? Math.ceil((reply.reasoning?.length ?? 0) / 4),
  };
}
