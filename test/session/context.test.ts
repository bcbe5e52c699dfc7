// StartSession.history (every ContentPart kind reaches the provider) and §5 compaction
// (ContextCompacted with real token counts, and the model sees the compacted history).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ValueOf } from "../support/session-protocol.ts";
import { nextOf, readTurn, rq, show, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

describe("history resume (Responses API, images on)", () => {
  let fx: SessionFixture;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "roz-providers-"));
    fx = await startSessionFixture({
      envFor: async (fake) => {
        const file = join(dir, "providers.json");
        const provider = { name: "fake", base_url: fake.baseURL, api: "responses", supports_images: true, default_model: "fake-model" };
        await writeFile(file, JSON.stringify({ providers: [provider] }));
        return { ROZ_PROVIDERS_FILE: file, ROZ_DEFAULT_MODEL: "fake/fake-model" };
      },
    });
  });
  afterEach(() => fx.reset());
  afterAll(async () => {
    await fx?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("every ContentPart kind of StartSession.history appears in the model request (connect)", async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const { client, started } = await fx.start("connect", {
      tools: [tool("read_file")],
      history: [
        {
          role: "user",
          parts: [
            { part: { case: "text", value: { text: "Please read x and look at this picture." } } },
            { part: { case: "image", value: { mediaType: "image/png", data: png } } },
          ],
        },
        {
          role: "assistant",
          parts: [
            { part: { case: "thinking", value: { thinking: "The user wants x read.", signature: "openai-responses/1:rs_prev:ENCRYPTED==" } } },
            { part: { case: "text", value: { text: "I'll read the file." } } },
            { part: { case: "toolUse", value: { id: "call_hist", name: "read_file", input: { path: "x", lines: 2 } } } },
            { part: { case: "toolUse", value: { id: "call_hist_2", name: "read_file", input: { path: "missing" } } } },
          ],
        },
        {
          role: "user",
          parts: [
            { part: { case: "toolResult", value: { toolUseId: "call_hist", name: "read_file", content: "contents of x" } } },
            { part: { case: "toolResult", value: { toolUseId: "call_hist_2", name: "read_file", content: "no such file", isError: true } } },
          ],
        },
        { role: "assistant", parts: [{ part: { case: "text", value: { text: "x says: contents of x" } } }] },
      ],
    });
    expect(started.model).toBe("fake/fake-model");
    fx.fake.plan({ text: "Continuing where we left off." });
    client.send(rq.user("continue"));
    const turn = await readTurn(client);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");

    const input = (await fx.request(0)).body.input as Record<string, unknown>[];
    expect(input).toEqual([
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "Please read x and look at this picture." },
          { type: "input_image", image_url: `data:image/png;base64,${Buffer.from(png).toString("base64")}`, detail: "auto" },
        ],
      },
      { type: "reasoning", id: "rs_prev", summary: [{ type: "summary_text", text: "The user wants x read." }], encrypted_content: "ENCRYPTED==" },
      { type: "message", role: "assistant", content: "I'll read the file." },
      { type: "function_call", call_id: "call_hist", name: "read_file", arguments: JSON.stringify({ path: "x", lines: 2 }) },
      { type: "function_call", call_id: "call_hist_2", name: "read_file", arguments: JSON.stringify({ path: "missing" }) },
      { type: "function_call_output", call_id: "call_hist", output: "contents of x" },
      { type: "function_call_output", call_id: "call_hist_2", output: "Error: no such file" },
      { type: "message", role: "assistant", content: "x says: contents of x" },
      { type: "message", role: "user", content: [{ type: "input_text", text: "continue" }] },
    ]);
  });

  it("a restored tool call id is not reused for a new call of the session (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", {
      tools: [tool("read_file")],
      history: [
        { role: "user", parts: [{ part: { case: "text", value: { text: "read x" } } }] },
        { role: "assistant", parts: [{ part: { case: "toolUse", value: { id: "call_same", name: "read_file", input: {} } } }] },
        { role: "user", parts: [{ part: { case: "toolResult", value: { toolUseId: "call_same", name: "read_file", content: "x" } } }] },
      ],
    });
    // The provider repeats an id the history already holds: the session keeps ids unique.
    fx.fake.plan({ toolCalls: [{ id: "call_same", name: "read_file", arguments: {} }] }, { text: "ok" });
    client.send(rq.user("read it again"));
    const request = await nextOf(client, "toolRequest");
    expect(request.toolCallId).not.toBe("call_same");
    client.send(rq.toolResult(request.toolCallId, "x again"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  });

  it("the tool round trip over the Responses API: function_call_output reaches the model (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("read_file")] });
    fx.fake.plan(
      { reasoning: "I should read it.", toolCalls: [{ id: "call_resp", name: "read_file", arguments: { path: "r.txt" } }], usage: { input: 12, output: 3 } },
      { text: "It says hi.", usage: { input: 20, output: 4 } },
    );
    client.send(rq.user("read r.txt", { messageId: "resp" }));
    const request = await nextOf(client, "toolRequest");
    expect(request).toMatchObject({ toolCallId: "call_resp", toolName: "read_file", parameters: { path: "r.txt" } });
    client.send(rq.toolResult("call_resp", "hi"));
    const turn = await readTurn(client);
    expect(
      valuesOf(client.responses.seen, "thinkingDelta")
        .map((d) => d.content)
        .join(""),
    ).toBe("I should read it.");
    expect(turnCompleteOf(turn)).toMatchObject({ messageId: "resp", stopReason: "end_turn", usage: { inputTokens: 32, outputTokens: 7 } });
    const input = (await fx.request(1)).body.input as Record<string, unknown>[];
    expect(input).toContainEqual({ type: "function_call", call_id: "call_resp", name: "read_file", arguments: JSON.stringify({ path: "r.txt" }) });
    expect(input).toContainEqual({ type: "function_call_output", call_id: "call_resp", output: "hi" });
  });

  it("cancel_turn over the Responses API aborts the provider stream (connect)", async () => {
    const { client } = await fx.start("connect");
    fx.fake.plan({ text: "word ".repeat(300), frameDelayMs: 30 });
    client.send(rq.user("go on and on"));
    await nextOf(client, "textDelta");
    client.send(rq.cancelTurn());
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("cancelled");
    const streaming = await fx.request(0);
    await streaming.closed;
    expect(streaming.aborted).toBe(true);
  });
});

describe("compaction (max_context_tokens 2000)", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture();
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  const MARKER = "[tool result cleared to save context]";
  /**
   * A distinct tool result of about 330 tokens: three of them pass 50 % of the budget
   * (tool_results), but never 85 % (a summary call would take the fake's next reply).
   */
  const longResult = (turn: number, tokens = 330): string => {
    const words: string[] = [];
    while (countTokens(words.join(" ")) < tokens) words.push(`turn${turn} word${words.length}`);
    return words.join(" ");
  };

  it("old tool results are cleared past 50 %: ContextCompacted{tool_results} with true counts; the model sees the marker (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("dump")], maxContextTokens: 2000 });
    let compacted: ValueOf<"contextCompacted">[] = [];
    let turnNo = 0;
    const results: string[] = [];
    while (compacted.length === 0) {
      turnNo++;
      expect(turnNo, "no compaction within 6 turns").toBeLessThanOrEqual(6);
      fx.fake.plan({ toolCalls: [{ id: `call_dump${turnNo}`, name: "dump", arguments: {} }] }, { text: `ok ${turnNo}` });
      client.send(rq.user(`dump ${turnNo}`));
      const first = await readUntilToolRequestOrEnd(client);
      results.push(longResult(turnNo));
      client.send(rq.toolResult(`call_dump${turnNo}`, results.at(-1)!));
      const turn = [...first, ...(await readTurn(client))];
      expect(turnCompleteOf(turn).stopReason, turn.map(show).join("\n")).toBe("end_turn");
      compacted = valuesOf(turn, "contextCompacted");
    }
    expect(turnNo).toBeGreaterThan(1);
    const event = compacted[0]!;
    expect(event.level).toBe("tool_results");
    expect(event.messagesAfter).toBe(event.messagesBefore);
    expect(event.tokensBefore).toBeGreaterThan(1000);
    expect(event.tokensAfter).toBeLessThan(event.tokensBefore);

    // The model's view after the compaction: some old results replaced by the marker, the
    // newest intact; the counts differ by exactly the tokens of what was cleared.
    const bodies = fx.requests().map((r) => r.body);
    const after = bodies.find((b) => b.messages.some((m: { content?: unknown }) => m.content === MARKER));
    expect(after, "no model request with a cleared tool result").toBeDefined();
    const toolContents: string[] = after.messages.filter((m: { role: string }) => m.role === "tool").map((m: { content: string }) => m.content);
    // That request carries the results of the turns before it, in order.
    const cleared = results.slice(0, toolContents.length).filter((r) => !toolContents.includes(r));
    expect(toolContents.at(-1)).toBe(results[toolContents.length - 1]);
    expect(cleared.length).toBeGreaterThan(0);
    expect(toolContents.filter((c) => c === MARKER)).toHaveLength(cleared.length);
    expect(event.tokensBefore - event.tokensAfter).toBe(cleared.reduce((n, r) => n + countTokens(r) - countTokens(MARKER), 0));
    expect(event.tokensAfter).toBeLessThan(1000);
  });

  it("past 85 % older turns are summarised by a tool-free model call: ContextCompacted{summary} with its text (connect)", async () => {
    const { client } = await fx.start("connect", { maxContextTokens: 2000 });
    // Long answers cannot be cleared like tool results or thinking: two of them stay under
    // 85 %; the third takes the history past it, and turn 1 is summarised at that turn's end.
    const ask = async (n: number, ...replies: Parameters<typeof fx.fake.plan>) => {
      fx.fake.plan(...replies);
      client.send(rq.user(`question ${n}`));
      return readTurn(client);
    };
    for (const n of [1, 2]) {
      const turn = await ask(n, { text: longResult(n, 600), usage: { input: 100, output: 10 } });
      expect(valuesOf(turn, "contextCompacted")).toEqual([]);
    }
    const summary = "The user asked three questions; turn 1 was about question 1.";
    const turn = await ask(3, { text: longResult(3, 600), usage: { input: 200, output: 5 } }, { text: summary, usage: { input: 50, output: 20 } });
    expect(turnCompleteOf(turn).stopReason, turn.map(show).join("\n")).toBe("end_turn");
    const [event] = valuesOf(turn, "contextCompacted");
    expect(event).toMatchObject({ level: "summary", summary });
    expect(event!.tokensBefore).toBeGreaterThan(0.85 * 2000);
    expect(event!.tokensAfter).toBeLessThan(event!.tokensBefore);
    expect(event!.messagesAfter).toBeLessThanOrEqual(event!.messagesBefore);
    // The summary call's usage counts for the turn.
    expect(turnCompleteOf(turn).usage).toMatchObject({ inputTokens: 250, outputTokens: 25 });
    const summaryCall = fx.requests().at(-1)!.body;
    expect(summaryCall.tools).toBeUndefined();
    expect(summaryCall.messages[0].content).toMatch(/^You compress conversations/);
    expect(JSON.stringify(summaryCall.messages.at(-1))).toContain("question 1");

    // The model continues on the summary instead of turn 1.
    await ask(4, { text: "ok 4" });
    const next = fx.requests().at(-1)!.body;
    expect(next.messages.slice(1, 3)).toEqual([
      { role: "user", content: "Summarise our conversation so far." },
      { role: "assistant", content: summary },
    ]);
    expect(JSON.stringify(next.messages)).not.toContain("turn1 word");
  });

  it("past 65 % thinking of older turns is dropped: ContextCompacted{thinking} with true counts (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { maxContextTokens: 2000 });
    // Turns of ~450 tokens of reasoning pass 65 % (no tool results to clear first); then the
    // oldest turn's thinking goes (the running turn's is kept).
    const reasoning = (n: number) => longResult(n, 450);
    const turns = [];
    for (const n of [1, 2, 3, 4]) {
      fx.fake.plan({ reasoning: reasoning(n), text: `answer ${n}`, chunkSize: 64 });
      client.send(rq.user(`question ${n}`));
      const turn = await readTurn(client);
      expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
      turns.push(turn);
    }
    // The first compaction comes at the end of the first turn past 65 % and drops the
    // thinking of every earlier turn (the running turn's is kept).
    const at = turns.findIndex((t) => valuesOf(t, "contextCompacted").length > 0);
    expect(at).toBeGreaterThan(0);
    const events = turns.flatMap((t) => valuesOf(t, "contextCompacted"));
    expect(
      events.map((e) => e.level).every((level) => level === "thinking"),
      JSON.stringify(events),
    ).toBe(true);
    const [event] = events;
    expect(event).toMatchObject({ level: "thinking" });
    expect(event!.tokensBefore).toBeGreaterThan(0.65 * 2000);
    expect(event!.messagesAfter).toBe(event!.messagesBefore);
    const earlier = Array.from({ length: at }, (_, i) => countTokens(reasoning(i + 1)));
    expect(event!.tokensBefore - event!.tokensAfter).toBe(earlier.reduce((a, b) => a + b, 0));
  });
});

/** Reads until the turn's first tool request (inclusive) or its end. */
async function readUntilToolRequestOrEnd(client: Parameters<typeof readTurn>[0]) {
  const out = [];
  for (;;) {
    const r = await client.next(10_000);
    out.push(r);
    if (r.response.case === "toolRequest" || r.response.case === "turnComplete") return out;
  }
}
