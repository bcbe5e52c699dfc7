import { countTokens as bpeCount, decode, encode } from "gpt-tokenizer/encoding/o200k_base";
import type { ModelMessage, ModelPart } from "../models/index.ts";

/**
 * Token counting with a real BPE tokenizer (o200k_base, the encoding of current OpenAI
 * models). Other providers tokenize differently; the counts are a close, consistent
 * estimate, which is what compaction thresholds and keepalives need.
 */

/** Fixed estimate for one image part: providers bill images by size, not by bytes. */
export const IMAGE_TOKEN_ESTIMATE = 1000;
/** Per-message framing overhead (role markers), as in OpenAI's chat format. */
const MESSAGE_OVERHEAD = 4;

// Special-token text such as "<|endoftext|>" in user data is ordinary text to us; the
// tokenizer's default would throw on it.
const plain = { disallowedSpecial: new Set<string>() };

/** Tokens of a text. Never throws, whatever the text contains. */
export function countTokens(text: string): number {
  return text === "" ? 0 : bpeCount(text, plain);
}

/** Token ids of a text (for head+tail cuts). */
export function encodeTokens(text: string): number[] {
  return encode(text, plain);
}

/** Text of token ids; a cut inside a multi-byte character leaves no replacement char. */
export function decodeTokens(tokens: number[]): string {
  return decode(tokens).replace(/\uFFFD+$/u, "").replace(/^\uFFFD+/u, "");
}

/** Tokens of one part: text, thinking, tool name + arguments, tool result; images estimated. */
export function countPartTokens(part: ModelPart): number {
  switch (part.type) {
    case "text":
      return countTokens(part.text);
    case "thinking":
      return countTokens(part.thinking);
    case "image":
      return IMAGE_TOKEN_ESTIMATE;
    case "tool_use":
      return countTokens(part.name) + countTokens(JSON.stringify(part.input));
    case "tool_result":
      return countTokens(part.name) + countTokens(part.content);
  }
}

/**
 * Counts messages and remembers each message's count. Messages must not be mutated after
 * they were counted (the agent replaces messages instead of editing them).
 */
export class TokenCounter {
  #cache = new WeakMap<ModelMessage, number>();

  message(message: ModelMessage): number {
    let n = this.#cache.get(message);
    if (n === undefined) {
      n = MESSAGE_OVERHEAD;
      for (const part of message.parts) n += countPartTokens(part);
      this.#cache.set(message, n);
    }
    return n;
  }

  messages(messages: readonly ModelMessage[]): number {
    let n = 0;
    for (const m of messages) n += this.message(m);
    return n;
  }
}
