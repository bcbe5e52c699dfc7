import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ModelError, OpenAIChatModel, OpenAIResponsesModel, type ModelAdapter } from "../../src/models/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai/index.ts";
import { collect, collectUntilError, finishOf, request, textOf, thinkingOf, toolCallsOf } from "./helpers.ts";

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(() => fake.close());

const styles = [
  { api: "chat", path: "/v1/chat/completions", make: () => new OpenAIChatModel({ provider: "fake", baseURL: fake.baseURL, supportsImages: true }) },
  { api: "responses", path: "/v1/responses", make: () => new OpenAIResponsesModel({ provider: "fake", baseURL: fake.baseURL, supportsImages: true }) },
] as const;

describe.each(styles)("$api streaming through the real openai client", ({ path, make }) => {
  let model: ModelAdapter;
  beforeEach(() => {
    model = make();
  });

  it("streams text as several deltas and ends with usage then end_turn", async () => {
    const before = fake.requests.length;
    fake.plan({ text: "The quick brown fox jumps.", chunkSize: 5, usage: { input: 12, output: 7 } });
    const events = await collect(model, request());
    expect(textOf(events)).toBe("The quick brown fox jumps.");
    expect(events.filter((e) => e.type === "text_delta").length).toBeGreaterThan(3);
    expect(events.slice(-2)).toEqual([
      { type: "usage", usage: { inputTokens: 12, outputTokens: 7, cacheReadTokens: 0, cacheCreationTokens: 0 } },
      { type: "finish", reason: "end_turn" },
    ]);
    expect(fake.requests.length).toBe(before + 1);
    const recorded = fake.requests.at(-1)!;
    expect(recorded.path).toBe(path);
    expect(recorded.body.stream).toBe(true);
    expect(recorded.aborted).toBe(false);
  });

  it("reassembles tool calls split across chunks, in order, with parsed arguments", async () => {
    fake.plan({
      text: "Let me look.",
      toolCalls: [
        { id: "call_a", name: "read_file", arguments: { path: "src/a.ts", lines: [1, 20] } },
        { id: "call_b", name: "grep", arguments: { pattern: "TODO", glob: "**/*.ts", nested: { deep: true } } },
      ],
      chunkSize: 3,
    });
    const events = await collect(model, request());
    expect(toolCallsOf(events)).toEqual([
      { type: "tool_call", id: "call_a", name: "read_file", arguments: { path: "src/a.ts", lines: [1, 20] } },
      { type: "tool_call", id: "call_b", name: "grep", arguments: { pattern: "TODO", glob: "**/*.ts", nested: { deep: true } } },
    ]);
    expect(finishOf(events)).toBe("tool_use");
    // Tool calls come after the text that preceded them.
    expect(events.findIndex((e) => e.type === "tool_call")).toBeGreaterThan(events.findIndex((e) => e.type === "text_delta"));
  });

  it("streams reasoning as thinking deltas before the text", async () => {
    fake.plan({ reasoning: "First, consider the question carefully.", text: "42" });
    const events = await collect(model, request());
    expect(thinkingOf(events)).toBe("First, consider the question carefully.");
    expect(textOf(events)).toBe("42");
    expect(events.findIndex((e) => e.type === "thinking_delta")).toBeLessThan(events.findIndex((e) => e.type === "text_delta"));
  });

  it("reports cached input tokens", async () => {
    fake.plan({ text: "ok", usage: { input: 1000, output: 3, cached: 768 } });
    const events = await collect(model, request());
    expect(events.find((e) => e.type === "usage")).toEqual({
      type: "usage",
      usage: { inputTokens: 1000, outputTokens: 3, cacheReadTokens: 768, cacheCreationTokens: 0 },
    });
  });

  it("maps a length stop to max_tokens and sends the output limit", async () => {
    fake.plan({ text: "truncated answ", finish: "length" });
    const events = await collect(model, request({ maxOutputTokens: 5 }));
    expect(finishOf(events)).toBe("max_tokens");
    const body = fake.requests.at(-1)!.body;
    expect(body.max_tokens ?? body.max_output_tokens).toBe(5);
  });

  it("passes tool arguments that are not a JSON object as invalidArguments", async () => {
    fake.plan({ toolCalls: [{ id: "call_bad", name: "write", arguments: '{"path": "a", "content": "unterminated' }] });
    const events = await collect(model, request());
    expect(toolCallsOf(events)).toEqual([
      { type: "tool_call", id: "call_bad", name: "write", arguments: {}, invalidArguments: '{"path": "a", "content": "unterminated' },
    ]);
  });

  it("turns an empty argument string into {}", async () => {
    fake.plan({ toolCalls: [{ id: "call_e", name: "now", arguments: "" }] });
    const events = await collect(model, request());
    expect(toolCallsOf(events)).toEqual([{ type: "tool_call", id: "call_e", name: "now", arguments: {} }]);
  });

  it("sends the key as a bearer token", async () => {
    const keyed =
      path === "/v1/responses"
        ? new OpenAIResponsesModel({ provider: "k", baseURL: fake.baseURL, apiKey: "sk-test-123", supportsImages: false })
        : new OpenAIChatModel({ provider: "k", baseURL: fake.baseURL, apiKey: "sk-test-123", supportsImages: false });
    fake.plan({ text: "ok" });
    await collect(keyed, request());
    expect(fake.requests.at(-1)!.headers.authorization).toBe("Bearer sk-test-123");
  });
});

describe("chat specifics", () => {
  const chat = () => new OpenAIChatModel({ provider: "fake", baseURL: fake.baseURL, supportsImages: true });

  it("reassembles parallel tool calls whose deltas are interleaved by index", async () => {
    fake.plan({
      interleaveToolCalls: true,
      chunkSize: 2,
      toolCalls: [
        { id: "call_1", name: "read_file", arguments: { path: "one.txt" } },
        { id: "call_2", name: "read_file", arguments: { path: "two.txt" } },
        { id: "call_3", name: "list_dir", arguments: { dir: "." } },
      ],
    });
    const events = await collect(chat(), request());
    expect(toolCallsOf(events).map((e) => e.type === "tool_call" && [e.id, e.arguments])).toEqual([
      ["call_1", { path: "one.txt" }],
      ["call_2", { path: "two.txt" }],
      ["call_3", { dir: "." }],
    ]);
  });

  it("reads Ollama/OpenRouter `reasoning` deltas as thinking too", async () => {
    fake.plan({ reasoning: "thinking via the reasoning field", reasoningField: "reasoning", text: "done" });
    const events = await collect(chat(), request());
    expect(thinkingOf(events)).toBe("thinking via the reasoning field");
  });

  it("asks for usage in the stream and uses max_tokens off OpenAI's endpoint", async () => {
    fake.plan({ text: "ok" });
    await collect(chat(), request({ maxOutputTokens: 99 }));
    const body = fake.requests.at(-1)!.body;
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.max_tokens).toBe(99);
    expect(body.max_completion_tokens).toBeUndefined();
  });

  it("calls tool use what it is even when a server says finish_reason stop", async () => {
    fake.plan({ toolCalls: [{ id: "call_x", name: "t", arguments: {} }], finish: "stop" });
    expect(finishOf(await collect(chat(), request()))).toBe("tool_use");
  });

  it("handles servers that reuse index 0 for parallel calls with different ids", async () => {
    const base = { id: "c1", object: "chat.completion.chunk", created: 1, model: "m" };
    const delta = (d: object, finish: string | null = null) => ({ ...base, choices: [{ index: 0, delta: d, finish_reason: finish }] });
    fake.plan({
      frames: [
        delta({ role: "assistant" }),
        delta({ tool_calls: [{ index: 0, id: "call_p", type: "function", function: { name: "a", arguments: '{"x":1}' } }] }),
        delta({ tool_calls: [{ index: 0, id: "call_q", type: "function", function: { name: "b", arguments: '{"y":2}' } }] }),
        delta({}, "tool_calls"),
      ],
    });
    const events = await collect(chat(), request());
    expect(toolCallsOf(events)).toEqual([
      { type: "tool_call", id: "call_p", name: "a", arguments: { x: 1 } },
      { type: "tool_call", id: "call_q", name: "b", arguments: { y: 2 } },
    ]);
  });

  it("fails with a retryable ModelError when the stream ends without a finish reason", async () => {
    const base = { id: "c2", object: "chat.completion.chunk", created: 1, model: "m" };
    fake.plan({ frames: [{ ...base, choices: [{ index: 0, delta: { content: "partial" }, finish_reason: null }] }] });
    const { events, error } = await collectUntilError(chat(), request());
    expect(textOf(events)).toBe("partial");
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).retryable).toBe(true);
  });
});

describe("responses specifics", () => {
  const responses = () => new OpenAIResponsesModel({ provider: "fake", baseURL: fake.baseURL, supportsImages: true });

  it("streams raw reasoning_text deltas (open-weight models) as thinking", async () => {
    fake.plan({ reasoning: "raw chain of thought", reasoningAsText: true, text: "answer" });
    const events = await collect(responses(), request());
    expect(thinkingOf(events)).toBe("raw chain of thought");
    expect(textOf(events)).toBe("answer");
  });

  it("returns encrypted reasoning as a thinking signature and sends it back as a reasoning item", async () => {
    fake.plan({ reasoning: "summary", encryptedReasoning: "gAAAA-secret", text: "hi" });
    const events = await collect(responses(), request());
    const signed = events.find((e) => e.type === "thinking_delta" && e.signature);
    expect(signed).toMatchObject({ type: "thinking_delta", text: "" });
    const signature = (signed as { signature: string }).signature;

    fake.plan({ text: "again" });
    await collect(
      responses(),
      request({
        messages: [
          { role: "user", parts: [{ type: "text", text: "q1" }] },
          {
            role: "assistant",
            parts: [
              { type: "thinking", thinking: "summary", signature },
              { type: "text", text: "hi" },
            ],
          },
          { role: "user", parts: [{ type: "text", text: "q2" }] },
        ],
      }),
    );
    const input = fake.requests.at(-1)!.body.input;
    expect(input[1]).toEqual({
      type: "reasoning",
      id: expect.stringMatching(/^rs_/),
      summary: [{ type: "summary_text", text: "summary" }],
      encrypted_content: "gAAAA-secret",
    });
    expect(input[2]).toEqual({ type: "message", role: "assistant", content: "hi" });
  });

  it("maps response.incomplete to max_tokens with its usage", async () => {
    fake.plan({ text: "cut", finish: "length", usage: { input: 5, output: 2 } });
    const events = await collect(responses(), request());
    expect(events.slice(-2)).toEqual([
      { type: "usage", usage: { inputTokens: 5, outputTokens: 2, cacheReadTokens: 0, cacheCreationTokens: 0 } },
      { type: "finish", reason: "max_tokens" },
    ]);
  });

  it("turns response.failed into a ModelError", async () => {
    fake.plan({
      frames: [
        { type: "response.created", sequence_number: 0, response: { id: "r", status: "in_progress", output: [] } },
        { type: "response.failed", sequence_number: 1, response: { id: "r", status: "failed", output: [], error: { code: "server_error", message: "boom" } } },
      ],
    });
    fake.plan({ text: "recovered" }); // retryable and nothing was yielded: retried
    const events = await collect(responses(), request());
    expect(textOf(events)).toBe("recovered");

    fake.plan({
      frames: [
        {
          type: "response.failed",
          sequence_number: 0,
          response: { id: "r", status: "failed", output: [], error: { code: "invalid_prompt", message: "nope" } },
        },
      ],
    });
    const { error } = await collectUntilError(responses(), request());
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).retryable).toBe(false);
    expect((error as ModelError).message).toContain("nope");
  });
});
