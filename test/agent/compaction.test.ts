import { describe, expect, it } from "vitest";
import type { AgentEvent } from "../../src/agent/index.ts";
import type { ModelMessage } from "../../src/models/index.ts";
import { reply, TestModel, text, usage, finish } from "./support/test-model.ts";
import { expectValidHistory, makeAgent, start, turn } from "./support/harness.ts";

type Compacted = Extract<AgentEvent, { type: "context_compacted" }>;

const words = (n: number, word = "alpha"): string => Array.from({ length: n }, (_, i) => `${word}${i % 10}`).join(" ");
const user = (t: string): ModelMessage => ({ role: "user", parts: [{ type: "text", text: t }] });
const assistant = (t: string, thought?: string): ModelMessage => ({
  role: "assistant",
  parts: [...(thought === undefined ? [] : [{ type: "thinking" as const, thinking: thought }]), { type: "text", text: t }],
});
/** One turn with a tool call: user, assistant tool_use, tool result, assistant answer. */
const toolTurn = (id: string, result: string, thought?: string): ModelMessage[] => [
  user(`question ${id}`),
  {
    role: "assistant",
    parts: [...(thought === undefined ? [] : [{ type: "thinking" as const, thinking: thought }]), { type: "tool_use", id, name: "read", input: { id } }],
  },
  { role: "user", parts: [{ type: "tool_result", toolUseId: id, name: "read", content: result, isError: false }] },
  assistant(`answer ${id}`),
];

/** Tokens of a history as the agent counts them. */
const tokensOf = (history: ModelMessage[]): number => makeAgent(new TestModel(), { history }).contextTokens();
/** Picks maxContextTokens so that history + a short prompt sits at `share` of it. */
const contextFor = (history: ModelMessage[], share: number): number => Math.round((tokensOf(history) + 10) / share);

function expectConsistent(events: Compacted[], initialMessages: number): void {
  let messages = initialMessages;
  for (const [i, e] of events.entries()) {
    expect(e.messagesBefore, `event ${i} messagesBefore`).toBe(messages);
    expect(e.tokensAfter, `event ${i} shrinks`).toBeLessThan(e.tokensBefore);
    if (i > 0) expect(e.tokensBefore).toBe(events[i - 1]!.tokensAfter);
    messages = e.messagesAfter;
  }
}

describe("compaction", () => {
  it("level tool_results: clears old tool results before the model call, keeps recent turns", async () => {
    const history = [...toolTurn("r1", words(600)), ...toolTurn("r2", words(20)), user("recent"), assistant("ok")];
    const maxContextTokens = contextFor(history, 0.55);
    const model = new TestModel([reply("fine")]);
    const agent = makeAgent(model, { history, maxContextTokens });
    const run = start(agent, turn("next"));
    const done = await run.done;
    const events = run.of("context_compacted");
    expect(events.map((e) => e.level)).toEqual(["tool_results"]);
    const [e] = events;
    expect(e!.messagesBefore).toBe(history.length + 1);
    expect(e!.messagesAfter).toBe(history.length + 1);
    // One tool-result message of the old turn r1 was rewritten.
    expect(e!.messagesAffected).toBe(1);
    expect(e!.tokensBefore).toBeGreaterThan(0.5 * maxContextTokens);
    expect(e!.tokensAfter).toBeLessThan(0.5 * maxContextTokens);
    // The model call already saw the cleared history; the events precede turn_complete.
    const sent = model.requests[0]!.messages;
    expect(sent[2]!.parts[0]).toMatchObject({ type: "tool_result", toolUseId: "r1", content: "[tool result cleared to save context]" });
    expect(sent[6]!.parts[0]).toMatchObject({ type: "tool_result", toolUseId: "r2", content: words(20) });
    expect(tokensOf(sent)).toBe(e!.tokensAfter);
    expect(done.record.compactions).toBe(1);
    expect(run.events.indexOf(e!)).toBeLessThan(run.events.indexOf(done));
    expectValidHistory(agent.history());
  });

  it("level tool_results: a short restored history past 50 % has its results cleared too (all but the running turn)", async () => {
    const history = toolTurn("only", words(600));
    const maxContextTokens = contextFor(history, 0.55);
    const model = new TestModel([reply("fine")]);
    const agent = makeAgent(model, { history, maxContextTokens });
    const run = start(agent, turn("next"));
    await run.done;
    expect(run.of("context_compacted").map((e) => e.level)).toEqual(["tool_results"]);
    const sent = model.requests[0]!.messages;
    expect(sent[2]!.parts[0]).toMatchObject({ type: "tool_result", toolUseId: "only", content: "[tool result cleared to save context]" });
    expectValidHistory(agent.history());
  });

  it("level thinking: drops old thinking when clearing results is not enough", async () => {
    const history = [user("q1"), assistant("a1", words(700, "think")), user("q2"), assistant("a2", "short thought"), user("q3"), assistant("a3")];
    const maxContextTokens = contextFor(history, 0.75);
    const model = new TestModel([reply("fine")]);
    const agent = makeAgent(model, { history, maxContextTokens });
    const run = start(agent, turn("next"));
    await run.done;
    const events = run.of("context_compacted");
    expect(events.map((e) => e.level)).toEqual(["thinking"]);
    expect(events[0]!.tokensBefore).toBeGreaterThan(0.65 * maxContextTokens);
    expect(events[0]!.tokensAfter).toBeLessThan(0.65 * maxContextTokens);
    const sent = model.requests[0]!.messages;
    expect(sent[1]).toEqual(assistant("a1"));
    // Thinking of the protected recent turns is kept.
    expect(sent[5]).toEqual(assistant("a3"));
    expect(sent[3]).toEqual(assistant("a2", "short thought"));
    expectValidHistory(agent.history());
  });

  it("level summary: summarises older turns with a tool-free model call, as a valid pair", async () => {
    // Mostly plain text: clearing results and thinking cannot bring it under 85 %.
    const history = [
      ...toolTurn("s1", words(40), words(30, "hmm")),
      user(words(1000, "long")),
      assistant(words(1000, "reply")),
      ...toolTurn("s2", "small"),
      user("latest question"),
      assistant("latest answer"),
    ];
    const maxContextTokens = contextFor(history, 0.95);
    const model = new TestModel([[text("SUMMARY: the user asked about s1 and long things."), usage(500, 20), finish()], reply("fine")]);
    const agent = makeAgent(model, { history, maxContextTokens });
    const run = start(agent, turn("next"));
    const done = await run.done;
    const events = run.of("context_compacted");
    expect(events.map((e) => e.level)).toEqual(["tool_results", "thinking", "summary"]);
    expectConsistent(events, history.length + 1);
    const summary = events[2]!;
    expect(summary.summary).toBe("SUMMARY: the user asked about s1 and long things.");
    // Everything before the last two turns was summarised into one pair.
    expect(summary.messagesAffected).toBe(summary.messagesBefore - summary.messagesAfter + 2);
    expect(summary.tokensAfter).toBeLessThan(0.85 * maxContextTokens);
    // Kept: the summary pair, the last two turns (user+assistant, and the new prompt).
    expect(summary.messagesAfter).toBe(2 + 2 + 1);

    // The summary call: tool-free, with its own system prompt, the older turns as text.
    const summaryCall = model.requests[0]!;
    expect(summaryCall.tools).toEqual([]);
    expect(summaryCall.system[0]).toMatch(/summar/i);
    expect(summaryCall.messages).toHaveLength(1);
    const transcript = summaryCall.messages[0]!.parts[0]!;
    expect(transcript.type === "text" && transcript.text.includes("question s2")).toBe(true);
    expect(transcript.type === "text" && transcript.text.includes("latest question")).toBe(false);

    const sent = model.requests[1]!.messages;
    expect(sent.slice(0, 2)).toEqual([user("Summarise our conversation so far."), assistant("SUMMARY: the user asked about s1 and long things.")]);
    expect(sent.slice(2)).toEqual([user("latest question"), assistant("latest answer"), user("next")]);
    expect(done.usage.inputTokens).toBe(510); // the summary call counts
    expect(done.record.compactions).toBe(3);
    expectValidHistory(agent.history());
    expect(agent.contextTokens()).toBeLessThan(0.85 * maxContextTokens);
  });

  it("compacts after a turn, before turn_complete, when the turn pushed history over the threshold", async () => {
    const history = [...toolTurn("p1", words(400)), user("q"), assistant("a"), user("q2"), assistant("a2")];
    const base = tokensOf(history);
    const maxContextTokens = Math.round(base / 0.45);
    const model = new TestModel([reply(words(Math.round(0.15 * maxContextTokens), "out"))]);
    const agent = makeAgent(model, { history, maxContextTokens });
    const run = start(agent, turn("write a lot"));
    const done = await run.done;
    // No compaction before the model call (under 50 %), one after it.
    expect(model.requests[0]!.messages[2]!.parts[0]).toMatchObject({ content: words(400) });
    const events = run.of("context_compacted");
    expect(events.map((e) => e.level)).toEqual(["tool_results"]);
    expect(events[0]!.tokensBefore).toBeGreaterThan(0.5 * maxContextTokens);
    expect(events[0]!.tokensAfter).toBe(agent.contextTokens());
    expect(run.events.at(-1)).toBe(done);
    expect(done.record.compactions).toBe(1);
  });

  it("does nothing under the thresholds, and skips a summary whose call failed", async () => {
    const small = [user("q"), assistant("a")];
    const model = new TestModel([reply("fine")]);
    const run = start(makeAgent(model, { history: small, maxContextTokens: 100_000 }), turn("next"));
    await run.done;
    expect(run.of("context_compacted")).toHaveLength(0);

    const history = [user(words(500, "a")), assistant(words(300, "b")), user("q2"), assistant("a2"), user("q3"), assistant("a3")];
    const failing = new TestModel([[{ fail: new Error("provider down") }], reply("still answered")]);
    const agent = makeAgent(failing, { history, maxContextTokens: contextFor(history, 0.9) });
    const run2 = start(agent, turn("next"));
    const done = await run2.done;
    expect(run2.of("context_compacted")).toHaveLength(0);
    expect(done.stopReason).toBe("end_turn");
    expect(failing.requests[1]!.messages).toHaveLength(history.length + 1);
  });
});
