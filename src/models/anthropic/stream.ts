/**
 * Anthropic Messages stream events → our events. Text and thinking deltas stream as they
 * arrive; a `tool_use` block is emitted complete at its `content_block_stop`, its
 * `input_json_delta` pieces reassembled; thinking signatures (`signature_delta`) and
 * `redacted_thinking` blocks are collected for the caller, which sends them back on the
 * next call. `ping` and unknown events carry nothing we report; `event: error` is thrown
 * by the SSE reader (src/models/sse.ts) and classified like any provider failure.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { ModelError } from "../model-error.ts";
import { toolCallEvent } from "../tool-arguments.ts";
import type { ModelEventSink, TokenUsage } from "../types.ts";

type Event = Anthropic.RawMessageStreamEvent;

/** How one message ended, for the caller to decide what comes next. */
export interface MessageEnd {
  /** The API's `stop_reason` (`end_turn`, `tool_use`, `pause_turn`, `refusal`, …). */
  stopReason: string;
  /** The assistant content as the API wants it back (thinking with signatures, text, tool uses). */
  content: Anthropic.ContentBlockParam[];
}

type Pending =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "tool_use"; id: string; name: string; args: string; input: unknown }
  | { type: "other" };

/**
 * Reads one message's events (`read` per event, then `end`): pushes deltas and complete
 * tool calls in stream order; `end` returns how the message ended. `toolName` maps the
 * API's tool name back to ours. A stream that ends before `message_stop` was cut short:
 * `end` throws a retryable ModelError.
 */
export class MessageEventReader {
  readonly #toolName: (apiName: string) => string;
  readonly #blocks: Pending[] = [];
  #thinkingBlocks = 0;
  #usage: Partial<Anthropic.MessageDeltaUsage> = {};
  /** What `#reportUsage` pushed so far. */
  #reported: TokenUsage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 };
  #stopReason: string | null = null;
  #stopped = false;

  constructor(toolName: (apiName: string) => string = (n) => n) {
    this.#toolName = toolName;
  }

  read(event: Event, sink: ModelEventSink): void {
    const blocks = this.#blocks;
    switch (event.type) {
      case "message_start":
        this.#usage = { ...event.message.usage };
        this.#reportUsage(sink);
        break;
      case "content_block_start": {
        const block = event.content_block;
        let pending: Pending;
        if (block.type === "text") pending = { type: "text", text: block.text };
        else if (block.type === "thinking") {
          pending = { type: "thinking", thinking: block.thinking, signature: block.signature ?? "" };
          // Separate blocks are separate paragraphs of the joined thinking.
          if (this.#thinkingBlocks++ > 0) sink({ type: "thinking_delta", text: "\n\n" });
          if (block.thinking) sink({ type: "thinking_delta", text: block.thinking });
        } else if (block.type === "redacted_thinking") pending = { type: "redacted_thinking", data: block.data };
        else if (block.type === "tool_use") pending = { type: "tool_use", id: block.id, name: block.name, args: "", input: block.input };
        else pending = { type: "other" };
        if (pending.type === "text" && pending.text) sink({ type: "text_delta", text: pending.text });
        blocks[event.index] = pending;
        break;
      }
      case "content_block_delta": {
        const block = blocks[event.index];
        const delta = event.delta;
        if (delta.type === "text_delta" && block?.type === "text") {
          block.text += delta.text;
          sink({ type: "text_delta", text: delta.text });
        } else if (delta.type === "thinking_delta" && block?.type === "thinking") {
          block.thinking += delta.thinking;
          sink({ type: "thinking_delta", text: delta.thinking });
        } else if (delta.type === "signature_delta" && block?.type === "thinking") {
          block.signature += delta.signature;
        } else if (delta.type === "input_json_delta" && block?.type === "tool_use") {
          block.args += delta.partial_json;
        }
        break;
      }
      case "content_block_stop": {
        const block = blocks[event.index];
        if (block?.type === "tool_use") sink(toolCallEvent(block.id, this.#toolName(block.name), argumentsOf(block)));
        break;
      }
      case "message_delta":
        this.#usage = { ...this.#usage, ...withoutNull(event.usage) };
        this.#reportUsage(sink);
        if (event.delta.stop_reason) this.#stopReason = event.delta.stop_reason;
        break;
      case "message_stop":
        this.#stopped = true;
        break;
      default:
        break; // ping, and event types newer than this adapter
    }
  }

  /**
   * Pushes what the provider's counts (cumulative, from `message_start` then each
   * `message_delta`) added since the last report: a call cut later still counts what was
   * reported before the cut, and the reports add up to the message's usage.
   */
  #reportUsage(sink: ModelEventSink): void {
    const now = toUsage(this.#usage);
    const was = this.#reported;
    const added: TokenUsage = {
      inputTokens: Math.max(0, now.inputTokens - was.inputTokens),
      outputTokens: Math.max(0, now.outputTokens - was.outputTokens),
      cacheReadTokens: Math.max(0, now.cacheReadTokens - was.cacheReadTokens),
      cacheCreationTokens: Math.max(0, now.cacheCreationTokens - was.cacheCreationTokens),
    };
    this.#reported = now;
    if (added.inputTokens + added.outputTokens + added.cacheReadTokens + added.cacheCreationTokens > 0) sink({ type: "usage", usage: added });
  }

  end(): MessageEnd {
    const stopReason = this.#stopReason;
    if (!this.#stopped || stopReason === null) {
      throw new ModelError("the model stream ended before the response was complete", { retryable: true });
    }
    return { stopReason, content: this.#blocks.flatMap(toParam) };
  }
}

/** The arguments text: the streamed pieces, else the input the block started with. */
function argumentsOf(block: Extract<Pending, { type: "tool_use" }>): string {
  if (block.args !== "") return block.args;
  const input = block.input;
  return input && typeof input === "object" && Object.keys(input).length > 0 ? JSON.stringify(input) : "";
}

function toParam(block: Pending | undefined): Anthropic.ContentBlockParam[] {
  switch (block?.type) {
    case "text":
      return block.text === "" ? [] : [{ type: "text", text: block.text }];
    case "thinking":
      return [{ type: "thinking", thinking: block.thinking, signature: block.signature }];
    case "redacted_thinking":
      return [{ type: "redacted_thinking", data: block.data }];
    case "tool_use": {
      let input: unknown = {};
      try {
        input = block.args === "" ? (block.input ?? {}) : JSON.parse(block.args);
      } catch {
        // sent back as {}: the invalid text went to the caller with the tool call
      }
      return [{ type: "tool_use", id: block.id, name: block.name, input }];
    }
    default:
      return [];
  }
}

function withoutNull<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined)) as Partial<T>;
}

/** Anthropic counts cached prompt tokens apart from `input_tokens`; ours includes them. */
function toUsage(usage: Partial<Anthropic.MessageDeltaUsage>): TokenUsage {
  const cacheRead = usage.cache_read_input_tokens ?? 0;
  const cacheCreation = usage.cache_creation_input_tokens ?? 0;
  return {
    inputTokens: (usage.input_tokens ?? 0) + cacheRead + cacheCreation,
    outputTokens: usage.output_tokens ?? 0,
    cacheReadTokens: cacheRead,
    cacheCreationTokens: cacheCreation,
  };
}
