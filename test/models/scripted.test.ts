import { describe, expect, it } from "vitest";
import { ModelError, ScriptedModel, parseScript, ScriptError, type ModelMessage } from "../../src/models/index.ts";
import { collect, collectUntilError, finishOf, request, textOf, thinkingOf, toolCallsOf, user } from "./helpers.ts";

const model = new ScriptedModel();

describe("scripted/default (echo)", () => {
  it("echoes the latest user text after a little thinking, with estimated usage", async () => {
    const events = await collect(
      model,
      request({ model: "default", messages: [user("first"), { role: "assistant", parts: [{ type: "text", text: "x" }] }, user("ping pong")] }),
    );
    expect(thinkingOf(events)).toContain("9 characters");
    expect(textOf(events)).toBe("You said: ping pong");
    expect(events.filter((e) => e.type === "text_delta").length).toBeGreaterThan(1);
    const usage = events.find((e) => e.type === "usage");
    expect(usage).toMatchObject({ type: "usage", usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number) } });
    expect((usage as { usage: { inputTokens: number } }).usage.inputTokens).toBeGreaterThan(0);
    expect(finishOf(events)).toBe("end_turn");
  });

  it("mentions attached images", async () => {
    const messages: ModelMessage[] = [
      {
        role: "user",
        parts: [
          { type: "text", text: "look" },
          { type: "image", mediaType: "image/png", data: new Uint8Array(4) },
        ],
      },
    ];
    expect(textOf(await collect(model, request({ model: "default", messages })))).toBe("You said: look (with 1 image)");
  });
});

describe("inline scripts", () => {
  const script = {
    responses: [
      [{ thinking: "I should read the file." }, { text: "Reading a." }, { tool_call: { id: "call_1", name: "read_file", arguments: { path: "a" } } }],
      [{ text: "done" }],
    ],
    usage: { input_tokens: 100, output_tokens: 10 },
  };

  it("plays responses[k] for the k-th call after the user message, then a plain end_turn", async () => {
    const first: ModelMessage = user(`script: ${JSON.stringify(script)}`);
    const one = await collect(model, request({ model: "default", messages: [first] }));
    expect(thinkingOf(one)).toBe("I should read the file.");
    expect(textOf(one)).toBe("Reading a.");
    expect(toolCallsOf(one)).toEqual([{ type: "tool_call", id: "call_1", name: "read_file", arguments: { path: "a" } }]);
    expect(one.find((e) => e.type === "usage")).toEqual({
      type: "usage",
      usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheCreationTokens: 0 },
    });
    expect(finishOf(one)).toBe("tool_use");

    const afterTool: ModelMessage[] = [
      first,
      {
        role: "assistant",
        parts: [
          { type: "text", text: "Reading a." },
          { type: "tool_use", id: "call_1", name: "read_file", input: { path: "a" } },
        ],
      },
      { role: "user", parts: [{ type: "tool_result", toolUseId: "call_1", name: "read_file", content: "A!", isError: false }] },
    ];
    const two = await collect(model, request({ model: "default", messages: afterTool }));
    expect(textOf(two)).toBe("done");
    expect(finishOf(two)).toBe("end_turn");

    const beyond = [...afterTool, { role: "assistant" as const, parts: [{ type: "text" as const, text: "done" }] }, user("ok")];
    // a new user text message: the script is no longer the latest, so the echo answers
    expect(textOf(await collect(model, request({ model: "default", messages: beyond })))).toBe("You said: ok");

    const exhausted = [...afterTool, { role: "assistant" as const, parts: [{ type: "text" as const, text: "done" }] }];
    const three = await collect(model, request({ model: "default", messages: exhausted }));
    expect(three.filter((e) => e.type === "text_delta" || e.type === "tool_call")).toEqual([]);
    expect(finishOf(three)).toBe("end_turn");
  });

  it("plays a response's `failed` steps after an error tool result (a denial), its `ok` steps otherwise", async () => {
    const branching = { responses: [[{ tool_call: { id: "call_1", name: "arm__move" } }], { ok: [{ text: "Moved." }], failed: [{ text: "Not moved." }] }] };
    const first = user(`script: ${JSON.stringify(branching)}`);
    const call: ModelMessage = { role: "assistant", parts: [{ type: "tool_use", id: "call_1", name: "arm__move", input: {} }] };
    const answered = (isError: boolean, content: string): ModelMessage[] => [
      first,
      call,
      { role: "user", parts: [{ type: "tool_result", toolUseId: "call_1", name: "arm__move", content, isError }] },
    ];
    expect(textOf(await collect(model, request({ model: "default", messages: answered(false, "moved to x=1") })))).toBe("Moved.");
    const denied = await collect(model, request({ model: "default", messages: answered(true, 'the user denied permission to run tool "arm__move"') }));
    expect(textOf(denied)).toBe("Not moved.");
    expect(finishOf(denied)).toBe("end_turn");
  });

  it("reads a ```script fenced block anywhere in the message, and generates missing call ids", async () => {
    const text = 'Please run this:\n```script\n{"responses":[[{"tool_call":{"name":"ls"}},{"finish":"max_tokens"},{"text":"never"}]]}\n```\nthanks';
    const events = await collect(model, request({ model: "default", messages: [user(text)] }));
    const [call] = toolCallsOf(events);
    expect(call).toMatchObject({ type: "tool_call", name: "ls", arguments: {}, id: expect.stringMatching(/^call_/) });
    expect(textOf(events)).toBe("");
    expect(finishOf(events)).toBe("max_tokens");
  });

  it("throws the scripted error with its retryable flag and status", async () => {
    const text = `script: {"responses":[[{"text":"partial "},{"error":{"message":"rate limited","retryable":true,"status":429}}]]}`;
    const { events, error } = await collectUntilError(model, request({ model: "default", messages: [user(text)] }));
    expect(textOf(events)).toBe("partial ");
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ message: "rate limited", retryable: true, status: 429 });
  });

  it("reports an invalid inline script as a non-retryable ModelError naming the field", async () => {
    const { error } = await collectUntilError(model, request({ model: "default", messages: [user('script: {"responses":[[{"tool_call":{}}]]}')] }));
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ retryable: false, status: 400 });
    expect((error as Error).message).toContain("responses[0][0].tool_call.name");
    const { error: syntax } = await collectUntilError(model, request({ model: "default", messages: [user("script: {not json")] }));
    expect((syntax as Error).message).toContain("invalid inline script");
  });

  it("honours the abort signal during a delay step promptly", async () => {
    const controller = new AbortController();
    const text = 'script: {"responses":[[{"text":"before"},{"delay_ms":60000},{"text":"after"}]]}';
    const started = performance.now();
    setTimeout(() => controller.abort(), 50);
    const { events, error } = await collectUntilError(model, request({ model: "default", messages: [user(text)], signal: controller.signal }));
    expect(textOf(events)).toBe("before");
    expect((error as Error).name).toBe("AbortError");
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe("named scripts", () => {
  const named = new ScriptedModel({
    scripts: { greet: parseScript({ responses: [[{ text: "Hello from a named script" }, { usage: { output_tokens: 3 } }]] }) },
  });

  it("plays the script named by the model id, and lists its models", async () => {
    const events = await collect(named, request({ model: "greet" }));
    expect(textOf(events)).toBe("Hello from a named script");
    expect(events.filter((e) => e.type === "usage")).toEqual([
      { type: "usage", usage: { inputTokens: 0, outputTokens: 3, cacheReadTokens: 0, cacheCreationTokens: 0 } },
    ]);
    expect(named.models()).toEqual(["default", "greet"]);
  });

  it("rejects an unknown script name", async () => {
    const { error } = await collectUntilError(named, request({ model: "nope" }));
    expect(error).toMatchObject({ retryable: false, status: 404 });
  });
});

describe("script validation", () => {
  it.each([
    [{}, "script.responses"],
    [{ responses: [[{ text: 1 }]] }, "script.responses[0][0].text"],
    [{ responses: [[{ text: "a", thinking: "b" }]] }, "script.responses[0][0]"],
    [{ responses: [[{ finish: "later" }]] }, "script.responses[0][0].finish"],
    [{ responses: [[{ delay_ms: -1 }]] }, "script.responses[0][0].delay_ms"],
    [{ responses: [[{ usage: { tokens: 3 } }]] }, "script.responses[0][0].usage.tokens"],
    [{ responses: [[{ error: { status: 99 } }]] }, "script.responses[0][0].error.status"],
    [{ responses: [], extra: true }, "script.extra"],
    [{ responses: [{ ok: [], maybe: [] }] }, "script.responses[0].maybe"],
    [{ responses: [{ failed: [{ text: 2 }] }] }, "script.responses[0].failed[0].text"],
    [{ responses: ["text"] }, "script.responses[0]"],
  ])("rejects %j at %s", (value, path) => {
    try {
      parseScript(value);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ScriptError);
      expect((err as ScriptError).path).toBe(path);
    }
  });
});
