/**
 * Renders a FakeReply as the Messages stream Anthropic sends: `message_start` (with the
 * prompt's usage), a `ping`, then per content block `content_block_start` … its deltas …
 * `content_block_stop` (thinking with `thinking_delta`s and a `signature_delta`,
 * `redacted_thinking` whole, text with `text_delta`s, `tool_use` with `input_json_delta`
 * pieces), then `message_delta` (stop reason, output usage) and `message_stop`.
 */
import { argumentsJson, splitText, usageFor, type FakeReply } from "../fake-openai/reply.ts";
import { fakeSignature } from "./signature.ts";

/** The Anthropic stop reason of a reply: `anthropicStop`, else from `finish` and the tool calls. */
function stopReason(reply: FakeReply): string {
  if (reply.anthropicStop) return reply.anthropicStop;
  if (reply.refusal !== undefined) return "refusal";
  if (reply.finish === "length") return "max_tokens";
  if (reply.finish === "content_filter") return "refusal";
  return (reply.toolCalls ?? []).length > 0 ? "tool_use" : "end_turn";
}

export function* messagesFrames(reply: FakeReply, body: Record<string, unknown>, id: string): Generator<object> {
  const size = reply.chunkSize ?? 4;
  const u = usageFor(reply, body);
  const cacheRead = u?.cached ?? 0;
  const cacheCreation = u?.cacheCreation ?? 0;
  yield {
    type: "message_start",
    message: {
      id: `msg_${id}`,
      type: "message",
      role: "assistant",
      model: typeof body.model === "string" ? body.model : "fake-model",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        // Anthropic counts cached prompt tokens apart from input_tokens.
        input_tokens: u ? Math.max(0, u.input - cacheRead - cacheCreation) : 0,
        output_tokens: 1,
        cache_creation_input_tokens: cacheCreation,
        cache_read_input_tokens: cacheRead,
      },
    },
  };
  yield { type: "ping" };
  let index = 0;
  if (reply.reasoning !== undefined) {
    const thinking = reply.reasoning;
    yield { type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } };
    for (const piece of splitText(thinking, size)) yield { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: piece } };
    yield { type: "content_block_delta", index, delta: { type: "signature_delta", signature: reply.signature ?? fakeSignature(thinking) } };
    yield { type: "content_block_stop", index: index++ };
  }
  if (reply.redactedThinking !== undefined) {
    yield { type: "content_block_start", index, content_block: { type: "redacted_thinking", data: reply.redactedThinking } };
    yield { type: "content_block_stop", index: index++ };
  }
  const deltas = [...Array<string>(reply.tokens ?? 0).fill("tok "), ...splitText((reply.text ?? "") + (reply.refusal ?? ""), size)];
  if (deltas.length > 0) {
    yield { type: "content_block_start", index, content_block: { type: "text", text: "", citations: null } };
    for (const text of deltas) yield { type: "content_block_delta", index, delta: { type: "text_delta", text } };
    yield { type: "content_block_stop", index: index++ };
  }
  for (const [n, call] of (reply.toolCalls ?? []).entries()) {
    const toolId = call.id ?? `toolu_fake_${n}_${id.slice(-6)}`;
    yield { type: "content_block_start", index, content_block: { type: "tool_use", id: toolId, name: call.name, input: {} } };
    for (const piece of splitText(argumentsJson(call), size)) {
      yield { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } };
    }
    yield { type: "content_block_stop", index: index++ };
  }
  yield {
    type: "message_delta",
    delta: { stop_reason: stopReason(reply), stop_sequence: reply.anthropicStop === "stop_sequence" ? "STOP" : null },
    usage: { output_tokens: u?.output ?? 0 },
  };
  yield { type: "message_stop" };
}
