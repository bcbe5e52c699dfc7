import { countTokens as bpeCount, decode, encode } from "gpt-tokenizer/encoding/o200k_base";
import { PrefixFold } from "../domain/index.ts";
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

/**
 * BPE merging is quadratic in the length of a pre-tokenized word, and a word can be as long
 * as a message (one 100 KB "word" stalled the process for seconds). Whitespace-free runs are
 * therefore encoded in pieces of this many characters: the count changes by at most a token
 * per piece, the work becomes linear.
 */
const MAX_RUN = 256;
const LONG_RUN = new RegExp(`\\S{${MAX_RUN + 1},}`, "g");
/** Texts up to this many characters are counted exactly; longer ones are estimated from samples. */
const EXACT_CHARS = 32_768;
/** The samples of an estimate: evenly spread windows, EXACT_CHARS of text in all. */
const SAMPLES = 16;
const SAMPLE_CHARS = EXACT_CHARS / SAMPLES;

/** Calls `each` with consecutive pieces of `text` (joined, they are `text`), no whitespace-free run longer than MAX_RUN. */
function forEachPiece(text: string, each: (piece: string) => void): void {
  let last = 0;
  for (const m of text.matchAll(LONG_RUN)) {
    if (m.index > last) each(text.slice(last, m.index));
    for (let i = 0; i < m[0].length; i += MAX_RUN) each(m[0].slice(i, i + MAX_RUN));
    last = m.index + m[0].length;
  }
  if (last < text.length) each(text.slice(last));
}

function exactCount(text: string): number {
  let n = 0;
  forEachPiece(text, (piece) => (n += bpeCount(piece, plain)));
  return n;
}

/**
 * Tokens of a text: exact up to EXACT_CHARS characters, beyond that extrapolated from
 * evenly spread samples, so that no text costs more than EXACT_CHARS of tokenizing (a
 * multi-megabyte tool result is counted in milliseconds). Never throws, whatever the text.
 */
export function countTokens(text: string): number {
  if (text === "") return 0;
  if (text.length <= EXACT_CHARS) return exactCount(text);
  const stride = (text.length - SAMPLE_CHARS) / (SAMPLES - 1);
  let sampled = 0;
  for (let i = 0; i < SAMPLES; i++) {
    const at = Math.floor(i * stride);
    sampled += exactCount(text.slice(at, at + SAMPLE_CHARS));
  }
  return Math.round((sampled * text.length) / (SAMPLES * SAMPLE_CHARS));
}

/** Token ids of a text (for head+tail cuts); long whitespace-free runs are encoded in pieces, as for counting. */
export function encodeTokens(text: string): number[] {
  const out: number[] = [];
  forEachPiece(text, (piece) => {
    for (const token of encode(piece, plain)) out.push(token);
  });
  return out;
}

/** Text of token ids; a cut inside a multi-byte character leaves no replacement char. */
export function decodeTokens(tokens: number[]): string {
  return decode(tokens)
    .replace(/\uFFFD+$/u, "")
    .replace(/^\uFFFD+/u, "");
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
 * they were counted (the agent replaces messages instead of editing them). The session's
 * conversation is counted by a running total (`messages`), so a call in a long session costs
 * only what the history gained since the last one.
 */
export class TokenCounter {
  #cache = new WeakMap<ModelMessage, number>();
  readonly #conversation = new PrefixFold<ModelMessage, number>(
    () => 0,
    (total, message) => total + this.message(message),
  );

  message(message: ModelMessage): number {
    let n = this.#cache.get(message);
    if (n === undefined) {
      n = MESSAGE_OVERHEAD;
      for (const part of message.parts) n += countPartTokens(part);
      this.#cache.set(message, n);
    }
    return n;
  }

  /** The session's conversation (as it grows, or rewritten). */
  messages(messages: readonly ModelMessage[]): number {
    return this.#conversation.of(messages);
  }

  /** A list beside the conversation (a compaction's candidate), leaving its running total as it is. */
  sumOf(messages: readonly ModelMessage[]): number {
    let n = 0;
    for (const m of messages) n += this.message(m);
    return n;
  }
}
