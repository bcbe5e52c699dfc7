/**
 * Renders a FakeReply as the Responses stream OpenAI sends: `response.created`,
 * `response.in_progress`, then per output item `response.output_item.added` … its deltas …
 * `response.output_item.done` (reasoning summary parts, message content parts, function
 * call arguments), and finally `response.completed` (or `response.incomplete`) carrying
 * the full response with usage. Every event has its `sequence_number`.
 */
import { argumentsJson, splitText, usageFor, type FakeReply } from "./reply.ts";

export function* responsesFrames(reply: FakeReply, body: Record<string, unknown>, id: string): Generator<object> {
  let sequence = 0;
  const event = (type: string, fields: object) => ({ type, sequence_number: sequence++, ...fields });
  const size = reply.chunkSize ?? 4;
  const output: object[] = [];
  const response = (status: string, extra: object = {}) => ({
    id,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    model: typeof body.model === "string" ? body.model : "fake-model",
    output: status === "in_progress" ? [] : output,
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: body.tools ?? [],
    error: null,
    incomplete_details: null,
    usage: null,
    ...extra,
  });

  yield event("response.created", { response: response("in_progress") });
  yield event("response.in_progress", { response: response("in_progress") });

  if (reply.reasoning !== undefined || reply.encryptedReasoning !== undefined) {
    const item_id = `rs_${id}`;
    const output_index = output.length;
    const text = reply.reasoning ?? "";
    yield event("response.output_item.added", { output_index, item: { id: item_id, type: "reasoning", summary: [] } });
    if (reply.reasoningAsText) {
      for (const delta of splitText(text, size)) {
        yield event("response.reasoning_text.delta", { item_id, output_index, content_index: 0, delta });
      }
      yield event("response.reasoning_text.done", { item_id, output_index, content_index: 0, text });
    } else if (text !== "") {
      const part = { type: "summary_text", text: "" };
      yield event("response.reasoning_summary_part.added", { item_id, output_index, summary_index: 0, part });
      for (const delta of splitText(text, size)) {
        yield event("response.reasoning_summary_text.delta", { item_id, output_index, summary_index: 0, delta });
      }
      yield event("response.reasoning_summary_text.done", { item_id, output_index, summary_index: 0, text });
      yield event("response.reasoning_summary_part.done", { item_id, output_index, summary_index: 0, part: { ...part, text } });
    }
    const item = {
      id: item_id,
      type: "reasoning",
      summary: reply.reasoningAsText || text === "" ? [] : [{ type: "summary_text", text }],
      ...(reply.reasoningAsText ? { content: [{ type: "reasoning_text", text }] } : {}),
      ...(reply.encryptedReasoning !== undefined ? { encrypted_content: reply.encryptedReasoning } : {}),
    };
    output.push(item);
    yield event("response.output_item.done", { output_index, item });
  }

  const text = (reply.tokens !== undefined ? "tok ".repeat(reply.tokens) : "") + (reply.text ?? "");
  if (text !== "") {
    const item_id = `msg_${id}`;
    const output_index = output.length;
    const pending = { id: item_id, type: "message", status: "in_progress", role: "assistant", content: [] };
    yield event("response.output_item.added", { output_index, item: pending });
    const part = { type: "output_text", text: "", annotations: [], logprobs: [] };
    yield event("response.content_part.added", { item_id, output_index, content_index: 0, part });
    const deltas = reply.tokens !== undefined ? [...Array<string>(reply.tokens).fill("tok "), ...splitText(reply.text ?? "", size)] : splitText(text, size);
    for (const delta of deltas) {
      yield event("response.output_text.delta", { item_id, output_index, content_index: 0, delta, logprobs: [] });
    }
    yield event("response.output_text.done", { item_id, output_index, content_index: 0, text, logprobs: [] });
    const done = { ...part, text };
    yield event("response.content_part.done", { item_id, output_index, content_index: 0, part: done });
    const item = { ...pending, status: "completed", content: [done] };
    output.push(item);
    yield event("response.output_item.done", { output_index, item });
  }

  if (reply.refusal !== undefined) {
    const item_id = `msg_refusal_${id}`;
    const output_index = output.length;
    const pending = { id: item_id, type: "message", status: "in_progress", role: "assistant", content: [] };
    yield event("response.output_item.added", { output_index, item: pending });
    yield event("response.content_part.added", { item_id, output_index, content_index: 0, part: { type: "refusal", refusal: "" } });
    for (const delta of splitText(reply.refusal, size)) yield event("response.refusal.delta", { item_id, output_index, content_index: 0, delta });
    yield event("response.refusal.done", { item_id, output_index, content_index: 0, refusal: reply.refusal });
    const done = { type: "refusal", refusal: reply.refusal };
    yield event("response.content_part.done", { item_id, output_index, content_index: 0, part: done });
    const item = { ...pending, status: "completed", content: [done] };
    output.push(item);
    yield event("response.output_item.done", { output_index, item });
  }

  for (const [index, call] of (reply.toolCalls ?? []).entries()) {
    const item_id = `fc_${index}_${id}`;
    const output_index = output.length;
    const args = argumentsJson(call);
    const base = { id: item_id, type: "function_call", call_id: call.id ?? `call_fake_${index}_${id.slice(-6)}`, name: call.name };
    yield event("response.output_item.added", { output_index, item: { ...base, status: "in_progress", arguments: "" } });
    for (const delta of splitText(args, size)) {
      yield event("response.function_call_arguments.delta", { item_id, output_index, delta });
    }
    yield event("response.function_call_arguments.done", { item_id, output_index, arguments: args });
    const item = { ...base, status: "completed", arguments: args };
    output.push(item);
    yield event("response.output_item.done", { output_index, item });
  }

  const u = usageFor(reply, body);
  const usage = u && {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
  };
  if (reply.finish === "length" || reply.finish === "content_filter") {
    const reason = reply.finish === "length" ? "max_output_tokens" : "content_filter";
    yield event("response.incomplete", { response: response("incomplete", { usage, incomplete_details: { reason } }) });
  } else {
    yield event("response.completed", { response: response("completed", { usage }) });
  }
}
