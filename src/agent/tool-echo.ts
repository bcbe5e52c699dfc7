import type { AgentEvent } from "./types.ts";

/** How much of a tool result `tool_finished` carries when nothing is configured. */
export const DEFAULT_TOOL_RESULT_ECHO_BYTES = 16_384;

/**
 * `text` cut to at most `maxBytes` bytes of UTF-8, never inside a character; `truncated`
 * when something was left out. Only the kept prefix is encoded, so a huge result costs little.
 */
export function cutUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  // Every UTF-16 unit takes 1–3 bytes: a text this short always fits.
  if (text.length * 3 <= maxBytes) return { text, truncated: false };
  // The first `maxBytes + 1` units take more than `maxBytes` bytes unless they are the whole text.
  const head = Buffer.from(text.slice(0, maxBytes + 1), "utf8");
  if (head.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  // A continuation byte (10xxxxxx) at the cut means the cut is inside a character: back off to its start.
  while (end > 0 && (head[end]! & 0xc0) === 0x80) end--;
  return { text: head.toString("utf8", 0, end), truncated: true };
}

/**
 * The event every attached client gets when a call that went out has ended: its result (or
 * the reason it has none, with `success: false`), cut to `maxBytes` of UTF-8. The model and
 * the stored record are unaffected by the cut.
 */
export function toolFinished(
  call: { id: string; name: string },
  success: boolean,
  result: string,
  maxBytes: number,
): Extract<AgentEvent, { type: "tool_finished" }> {
  const echoed = cutUtf8(result, maxBytes);
  return { type: "tool_finished", toolCallId: call.id, toolName: call.name, success, result: echoed.text, truncated: echoed.truncated };
}
