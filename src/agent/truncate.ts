import { decodeTokens, encodeTokens } from "./tokens.ts";

/** What a cut result looks like to the model. */
export interface Truncated {
  text: string;
  truncated: boolean;
}

// Text is never tokenized whole beyond this many characters per allowed token, so a
// multi-megabyte result stays cheap (a token is rarely longer than 8 characters).
const CHARS_PER_TOKEN_CAP = 8;
const HEAD_SHARE = 0.6;

/**
 * Keeps at most `maxTokens` tokens of `text` (plus the marker): the head (60 %) and the
 * tail (40 %), joined by a marker saying how many characters were left out. Text within
 * the budget is returned unchanged.
 */
export function truncateHeadTail(text: string, maxTokens: number): Truncated {
  // A token is at least one UTF-8 byte: short texts need no tokenizing at all.
  if (maxTokens <= 0 || Buffer.byteLength(text) <= maxTokens) return { text, truncated: false };
  const headBudget = Math.ceil(maxTokens * HEAD_SHARE);
  const tailBudget = maxTokens - headBudget;
  const charCap = maxTokens * CHARS_PER_TOKEN_CAP;
  let headTokens: number[];
  let tailTokens: number[];
  if (text.length > 2 * charCap) {
    headTokens = encodeTokens(text.slice(0, charCap)).slice(0, headBudget);
    tailTokens = tailBudget > 0 ? encodeTokens(text.slice(-charCap)).slice(-tailBudget) : [];
  } else {
    const all = encodeTokens(text);
    if (all.length <= maxTokens) return { text, truncated: false };
    headTokens = all.slice(0, headBudget);
    tailTokens = tailBudget > 0 ? all.slice(-tailBudget) : [];
  }
  const head = decodeTokens(headTokens);
  const tail = decodeTokens(tailTokens);
  const omitted = text.length - head.length - tail.length;
  return { text: `${head}\n[… ${omitted} characters truncated …]\n${tail}`, truncated: true };
}
