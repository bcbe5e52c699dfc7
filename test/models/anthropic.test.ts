// The anthropic adapter through the real @anthropic-ai/sdk against the fake Messages API:
// streaming (text, thinking with signatures, redacted thinking, tool_use input JSON), what
// is sent back on the next call, caching breakpoints and usage, and stop reasons.
import { afterAll, beforeAll, expect, it } from "vitest";
import { AnthropicModel, type AnthropicModelOptions, type ModelMessage } from "../../src/models/index.ts";
import { fakeSignature, startFakeAnthropic, type FakeAnthropic } from "../support/fake-anthropic/index.ts";
import { collect, collectUntilError, finishOf, request, textOf, thinkingOf, toolCallsOf, usageOf, user } from "./helpers.ts";

let fake: FakeAnthropic;
beforeAll(async () => {
  fake = await startFakeAnthropic();
});
afterAll(() => fake.close());

const model = (options: Partial<AnthropicModelOptions> = {}) =>
  new AnthropicModel({ provider: "anthropic", apiKey: "sk-ant-test", baseURL: fake.url, supportsImages: true, ...options });
const signatureOf = (events: Awaited<ReturnType<typeof collect>>) =>
  events.flatMap((e) => (e.type === "thinking_delta" && e.signature !== undefined ? [e.signature] : [])).at(-1);

it("streams text deltas, sends the key and version headers, reports usage as the API does, and ends with end_turn", async () => {
  fake.plan({ text: "The quick brown fox jumps.", chunkSize: 5, usage: { input: 12, output: 7 } });
  const events = await collect(model(), request());
  expect(textOf(events)).toBe("The quick brown fox jumps.");
  expect(events.filter((e) => e.type === "text_delta").length).toBeGreaterThan(3);
  expect(events.at(-1)).toEqual({ type: "finish", reason: "end_turn" });
  // message_start's prompt (and first output token) comes first, message_delta's output last.
  expect(events[0]).toEqual({ type: "usage", usage: { inputTokens: 12, outputTokens: 1, cacheReadTokens: 0, cacheCreationTokens: 0 } });
  expect(usageOf(events)).toEqual({ inputTokens: 12, outputTokens: 7, cacheReadTokens: 0, cacheCreationTokens: 0 });
  const recorded = fake.requests.at(-1)!;
  expect(recorded.path).toBe("/v1/messages");
  expect(recorded.headers["x-api-key"] ?? recorded.headers.authorization, JSON.stringify(recorded.headers)).toMatch(/sk-ant-test/);
  expect(recorded.headers["anthropic-version"]).toBeTruthy();
  expect(recorded.body).toMatchObject({ model: "fake-model", stream: true, max_tokens: 8192 });
  expect(recorded.body.system).toEqual([{ type: "text", text: "You are a test.", cache_control: { type: "ephemeral" } }]);
});

it("reassembles tool_use input from input_json_delta pieces; finish tool_use", async () => {
  fake.plan({
    text: "Let me look.",
    toolCalls: [
      { id: "toolu_a", name: "read_file", arguments: { path: "src/a.ts", lines: [1, 20] } },
      { id: "toolu_b", name: "grep", arguments: { pattern: "TODO", nested: { deep: true } } },
    ],
    chunkSize: 3,
  });
  const events = await collect(model(), request());
  expect(toolCallsOf(events)).toEqual([
    { type: "tool_call", id: "toolu_a", name: "read_file", arguments: { path: "src/a.ts", lines: [1, 20] } },
    { type: "tool_call", id: "toolu_b", name: "grep", arguments: { pattern: "TODO", nested: { deep: true } } },
  ]);
  expect(finishOf(events)).toBe("tool_use");
});

it("invalid tool input JSON is reported on the call, not thrown", async () => {
  fake.plan({ toolCalls: [{ id: "toolu_bad", name: "x", arguments: '{"a": ' }] });
  const events = await collect(model(), request());
  expect(toolCallsOf(events)).toEqual([{ type: "tool_call", id: "toolu_bad", name: "x", arguments: {}, invalidArguments: '{"a": ' }]);
});

it("thinking streams as deltas and carries the block's signature; the next call sends it back unmodified", async () => {
  const thinking = "First, consider the question carefully.";
  fake.plan({ reasoning: thinking, toolCalls: [{ id: "toolu_t", name: "look", arguments: {} }] });
  const adapter = model({ thinkingBudget: 2048 });
  const events = await collect(adapter, request({ tools: [{ name: "look", description: "look", parameters: { type: "object" } }] }));
  expect(thinkingOf(events)).toBe(thinking);
  expect(signatureOf(events)).toBe(fakeSignature(thinking));
  expect(fake.requests.at(-1)!.body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
  // The agent keeps thinking, signature and call; the fake rejects the next call if the
  // thinking block is missing, unsigned or altered.
  const history: ModelMessage[] = [
    user("hello"),
    {
      role: "assistant",
      parts: [
        { type: "thinking", thinking, signature: signatureOf(events)! },
        { type: "tool_use", id: "toolu_t", name: "look", input: {} },
      ],
    },
    { role: "user", parts: [{ type: "tool_result", toolUseId: "toolu_t", name: "look", content: "nothing", isError: false }] },
  ];
  fake.plan({ text: "done" });
  const next = await collect(adapter, request({ messages: history, tools: [{ name: "look", description: "look", parameters: { type: "object" } }] }));
  expect(finishOf(next)).toBe("end_turn");
  expect(fake.requests.at(-1)!.body.messages[1].content[0]).toEqual({ type: "thinking", thinking, signature: fakeSignature(thinking) });

  // Without the signature (e.g. another provider's thinking) the block is dropped, and the
  // fake — like the API — refuses a tool-use turn with thinking on that has none.
  const unsigned = structuredClone(history);
  unsigned[1]!.parts[0] = { type: "thinking", thinking };
  const { error } = await collectUntilError(adapter, request({ messages: unsigned, tools: [] }));
  expect(error).toMatchObject({ reason: "model_error", retryable: false, status: 400 });
  expect(String((error as Error).message)).toMatch(/must start with a thinking block/);
});

it("redacted_thinking is kept with the thinking and sent back as it came", async () => {
  fake.plan({ reasoning: "visible part", redactedThinking: "EncryptedOpaqueData==", text: "ok" });
  const events = await collect(model({ thinkingBudget: 1024 }), request());
  const signature = signatureOf(events)!;
  expect(signature.startsWith("anthropic-blocks/1:")).toBe(true);
  fake.plan({ text: "again" });
  const history: ModelMessage[] = [
    user("hello"),
    {
      role: "assistant",
      parts: [
        { type: "thinking", thinking: "visible part", signature },
        { type: "text", text: "ok" },
      ],
    },
    user("more"),
  ];
  await collect(model({ thinkingBudget: 1024 }), request({ messages: history }));
  expect(fake.requests.at(-1)!.body.messages[1].content).toEqual([
    { type: "thinking", thinking: "visible part", signature: fakeSignature("visible part") },
    { type: "redacted_thinking", data: "EncryptedOpaqueData==" },
    { type: "text", text: "ok" },
  ]);
});

it("cache_control on the last tool, the system and the last two user turns (four at most); cache usage mapped", async () => {
  fake.plan({ text: "cached", usage: { input: 1000, output: 5, cached: 600, cacheCreation: 300 } });
  const messages: ModelMessage[] = [
    user("one"),
    { role: "assistant", parts: [{ type: "text", text: "1" }] },
    user("two"),
    { role: "assistant", parts: [{ type: "text", text: "2" }] },
    user("three"),
  ];
  const tools = ["a", "b"].map((name) => ({ name, description: name, parameters: { type: "object" } }));
  const events = await collect(model(), request({ messages, tools, system: ["first", "second"] }));
  expect({ type: "usage", usage: usageOf(events) }).toEqual({
    type: "usage",
    usage: { inputTokens: 1000, outputTokens: 5, cacheReadTokens: 600, cacheCreationTokens: 300 },
  });
  const body = fake.requests.at(-1)!.body;
  const marked = JSON.stringify(body).match(/cache_control/g) ?? [];
  expect(marked).toHaveLength(4);
  expect(body.tools.map((t: { cache_control?: unknown }) => t.cache_control !== undefined)).toEqual([false, true]);
  expect(body.system.map((b: { cache_control?: unknown }) => b.cache_control !== undefined)).toEqual([false, true]);
  expect(body.messages.map((m: { content: { cache_control?: unknown }[] }) => m.content.at(-1)!.cache_control !== undefined)).toEqual([
    false,
    false,
    true,
    false,
    true,
  ]);
});

it("images go as base64 image blocks; tool errors as is_error results", async () => {
  fake.plan({ text: "a red dot" });
  const png = new Uint8Array([137, 80, 78, 71]);
  const messages: ModelMessage[] = [
    user("run it"),
    { role: "assistant", parts: [{ type: "tool_use", id: "toolu_1", name: "run", input: {} }] },
    {
      role: "user",
      parts: [
        { type: "tool_result", toolUseId: "toolu_1", name: "run", content: "boom", isError: true },
        { type: "image", mediaType: "image/png", data: png },
      ],
    },
  ];
  await collect(model(), request({ messages }));
  expect(fake.requests.at(-1)!.body.messages[2].content).toEqual([
    { type: "tool_result", tool_use_id: "toolu_1", content: "boom", is_error: true },
    { type: "image", source: { type: "base64", media_type: "image/png", data: Buffer.from(png).toString("base64") }, cache_control: { type: "ephemeral" } },
  ]);
});

it.each([
  ["max_tokens", "max_tokens"],
  ["stop_sequence", "end_turn"],
  ["refusal", "content_filter"],
  ["end_turn", "end_turn"],
] as const)("stop_reason %s → finish %s", async (stop, finish) => {
  fake.plan({ text: "some", anthropicStop: stop });
  expect(finishOf(await collect(model(), request()))).toBe(finish);
});

it("pause_turn: the paused content is sent back as the assistant's and the call continues as one response", async () => {
  fake.plan({ text: "Searching", anthropicStop: "pause_turn", usage: { input: 10, output: 2 } }, { text: " done.", usage: { input: 12, output: 3 } });
  const before = fake.requests.length;
  const events = await collect(model(), request());
  expect(textOf(events)).toBe("Searching done.");
  expect(events.filter((e) => e.type === "finish")).toEqual([{ type: "finish", reason: "end_turn" }]);
  expect(usageOf(events)).toEqual({ inputTokens: 22, outputTokens: 5, cacheReadTokens: 0, cacheCreationTokens: 0 });
  expect(fake.requests.length).toBe(before + 2);
  expect(fake.requests.at(-1)!.body.messages.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "Searching" }] });
});

it.each([429, 529, 500])("HTTP %i before the first event is retried, honouring retry-after", async (status) => {
  const before = fake.requests.length;
  fake.plan({ status, retryAfter: 0, message: "busy" }, { text: "made it" });
  const events = await collect(model({ retry: { baseDelayMs: 1 } }), request());
  expect(textOf(events)).toBe("made it");
  expect(fake.requests.length).toBe(before + 2);
});

it("a retry-after beyond the cap is not waited for; 400 is not retried", async () => {
  fake.plan({ status: 429, retryAfter: 3600, message: "later" });
  const slow = await collectUntilError(model(), request());
  expect(slow.error).toMatchObject({ reason: "model_error", retryable: true, status: 429, retryAfterMs: 3_600_000 });
  const before = fake.requests.length;
  fake.plan({ status: 400, message: "bad" });
  const bad = await collectUntilError(model(), request());
  expect(bad.error).toMatchObject({ reason: "model_error", retryable: false, status: 400 });
  expect(fake.requests.length).toBe(before + 1);
});

it("an error event mid-stream fails the call (overloaded: retryable) and is not replayed after output", async () => {
  const before = fake.requests.length;
  fake.plan({
    frames: [
      {
        type: "message_start",
        message: {
          id: "msg_e",
          type: "message",
          role: "assistant",
          model: "fake-model",
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 3, output_tokens: 1 },
        },
      },
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "partial" } },
      { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
    ],
  });
  const { events, error } = await collectUntilError(model(), request());
  expect(textOf(events)).toBe("partial");
  expect(error).toMatchObject({ reason: "model_error", retryable: true });
  expect(fake.requests.length).toBe(before + 1);
});

it("a stream cut before message_stop is a retryable failure (retried when nothing was yielded)", async () => {
  const before = fake.requests.length;
  fake.plan({ text: "never seen", cutAfter: 2 }, { text: "second try" });
  const events = await collect(model({ retry: { baseDelayMs: 1 } }), request());
  expect(textOf(events)).toBe("second try");
  expect(fake.requests.length).toBe(before + 2);
});

it("abort really aborts: the fake sees the request closed, the stream throws the abort reason", async () => {
  fake.plan({ text: "slow ".repeat(50), frameDelayMs: 50 });
  const controller = new AbortController();
  const iterator = model()
    .stream(request({ signal: controller.signal }))
    [Symbol.asyncIterator]();
  let first = (await iterator.next()).value;
  while (first?.type === "usage") first = (await iterator.next()).value;
  expect(first).toMatchObject({ type: "text_delta" });
  const recorded = fake.requests.at(-1)!;
  controller.abort();
  await expect(iterator.next()).rejects.toMatchObject({ name: "AbortError" });
  await recorded.closed;
  expect(recorded.aborted).toBe(true);
});
