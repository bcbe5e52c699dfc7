/**
 * Renders a FakeReply as the Chat Completions stream OpenAI sends: a first chunk with the
 * role, content/reasoning deltas, tool-call deltas (name and id first, then argument
 * pieces, per `index`), a chunk with `finish_reason`, and — when the request asked for it
 * with `stream_options.include_usage` — a final chunk with empty `choices` and `usage`.
 */
import { argumentsJson, splitText, usageFor, type FakeReply } from "./reply.ts";

type Delta = Record<string, unknown>;

export function* chatFrames(reply: FakeReply, body: Record<string, unknown>, id: string): Generator<object> {
  const created = Math.floor(Date.now() / 1000);
  const model = typeof body.model === "string" ? body.model : "fake-model";
  const chunk = (delta: Delta | undefined, finish: string | null = null, extra: object = {}) => ({
    id,
    object: "chat.completion.chunk",
    created,
    model,
    system_fingerprint: "fp_fake",
    choices: delta ? [{ index: 0, delta, logprobs: null, finish_reason: finish }] : [],
    ...extra,
  });
  const size = reply.chunkSize ?? 4;

  yield chunk({ role: "assistant", content: "", refusal: null });
  if (reply.reasoning) {
    const field = reply.reasoningField ?? "reasoning_content";
    for (const piece of splitText(reply.reasoning, size)) yield chunk({ [field]: piece });
  }
  if (reply.tokens !== undefined) {
    for (let i = 0; i < reply.tokens; i++) yield chunk({ content: "tok " });
  }
  for (const piece of splitText(reply.text ?? "", size)) yield chunk({ content: piece });
  for (const piece of splitText(reply.refusal ?? "", size)) yield chunk({ refusal: piece });

  const calls = (reply.toolCalls ?? []).map((call, index) => ({
    index,
    id: call.id ?? `call_fake_${index}_${id.slice(-6)}`,
    name: call.name,
    pieces: splitText(argumentsJson(call), size),
  }));
  if (reply.interleaveToolCalls) {
    yield chunk({ tool_calls: calls.map((c) => ({ index: c.index, id: c.id, type: "function", function: { name: c.name, arguments: "" } })) });
    const rounds = Math.max(0, ...calls.map((c) => c.pieces.length));
    for (let r = 0; r < rounds; r++) {
      const deltas = calls.filter((c) => r < c.pieces.length).map((c) => ({ index: c.index, function: { arguments: c.pieces[r] } }));
      yield chunk({ tool_calls: deltas });
    }
  } else {
    for (const c of calls) {
      yield chunk({ tool_calls: [{ index: c.index, id: c.id, type: "function", function: { name: c.name, arguments: "" } }] });
      for (const piece of c.pieces) yield chunk({ tool_calls: [{ index: c.index, function: { arguments: piece } }] });
    }
  }

  yield chunk({}, reply.finish ?? (calls.length > 0 ? "tool_calls" : "stop"));
  const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
  const usage = usageFor(reply, body);
  if (usage && streamOptions?.include_usage) {
    yield chunk(undefined, null, {
      usage: {
        prompt_tokens: usage.input,
        completion_tokens: usage.output,
        total_tokens: usage.input + usage.output,
        prompt_tokens_details: { cached_tokens: usage.cached, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: usage.reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
    });
  }
}
