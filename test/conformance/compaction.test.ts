// session-behaviour.md §5 on the offline default model (the echo): what a client suite
// without a provider of its own sees when a long conversation passes the thresholds.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConversationMessageSchema, SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import type { ClientKind } from "../support/session-client.ts";
import { barrier, readTurn, rq, show, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { startWorld, type World } from "./support.ts";

let world: World;
beforeAll(async () => {
  world = await startWorld();
});
afterEach(() => world.reset());
afterAll(() => world?.close());

const prompt = (turn: number): string => Array.from({ length: 120 }, (_, i) => `t${turn}w${i}`).join(" ");

it.each<ClientKind>(["grpc-js", "connect"])(
  "every ContextCompacted really shrinks the history, and past 85 percent older turns are summarised (%s)",
  async (kind) => {
    const { client } = await world.start(kind, { maxContextTokens: 2000 });
    const seen: SessionResponse[] = [];
    for (let turn = 0; turn < 8; turn++) {
      client.send(rq.user(prompt(turn)));
      const responses = await readTurn(client);
      expect(turnCompleteOf(responses).stopReason).toBe("end_turn");
      // A context_compacted may also follow the turn_complete.
      seen.push(...responses, ...(await barrier(client)));
    }
    const events = valuesOf(seen, "contextCompacted");
    const trace = seen
      .filter((r) => r.response.case === "contextCompacted")
      .map((r) => show(r).slice(0, 300))
      .join("\n");
    expect(events.length, trace).toBeGreaterThan(0);
    for (const e of events) {
      expect(["tool_results", "thinking", "summary"], trace).toContain(e.level);
      expect(e.tokensAfter, trace).toBeLessThan(e.tokensBefore);
      expect(e.messagesAfter, trace).toBeLessThanOrEqual(e.messagesBefore);
    }
    const summaries = events.filter((e) => e.level === "summary");
    expect(summaries.length, trace).toBeGreaterThan(0);
    for (const s of summaries) {
      expect(s.summary ?? "", trace).not.toBe("");
      expect(s.messagesAfter, trace).toBeLessThan(s.messagesBefore);
    }
  },
  30_000,
);

type HistoryMessage = MessageInitShape<typeof ConversationMessageSchema>;

/** One earlier turn: a question, a tool call, its (long) result, the answer; optional (long) thinking. */
const earlierTurn = (id: string, result: string, thinking = ""): HistoryMessage[] => [
  { role: "user", parts: [{ part: { case: "text", value: { text: "read the log" } } }] },
  {
    role: "assistant",
    parts: [
      ...(thinking !== "" ? [{ part: { case: "thinking" as const, value: { thinking } } }] : []),
      { part: { case: "toolUse", value: { id, name: "read_log", input: { path: "app.log" } } } },
    ],
  },
  { role: "user", parts: [{ part: { case: "toolResult", value: { toolUseId: id, name: "read_log", content: result } } }] },
  { role: "assistant", parts: [{ part: { case: "text", value: { text: "The log is long." } } }] },
];

const filler = (n: number, word: string): string => Array.from({ length: n }, (_, i) => `${word}${i}`).join(" ");

// The oldest of three restored turns carries the weight; the two recent ones are kept as they are.
it.each<{ level: string; history: HistoryMessage[] }>([
  { level: "tool_results", history: [...earlierTurn("c1", filler(600, "line")), ...earlierTurn("c2", "ok"), ...earlierTurn("c3", "ok")] },
  { level: "thinking", history: [...earlierTurn("c1", "ok", filler(700, "idea")), ...earlierTurn("c2", "ok"), ...earlierTurn("c3", "ok")] },
])("a restored history past the threshold: the old turn's $level go before the next model call", async ({ level, history }) => {
  const { client } = await world.start("grpc-js", { history, maxContextTokens: 2000 });
  client.send(rq.user("what next?"));
  const turn = await readTurn(client);
  expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  const [first] = valuesOf(turn, "contextCompacted");
  expect(first, turn.map((r) => show(r).slice(0, 200)).join("\n")).toMatchObject({ level, messagesBefore: 13, messagesAfter: 13 });
  expect(first!.tokensBefore).toBeGreaterThan(level === "thinking" ? 1300 : 1000);
  expect(first!.tokensAfter).toBeLessThan(first!.tokensBefore - 500);
  // The compaction happened before the model call of this turn.
  expect(turn.findIndex((r) => r.response.case === "contextCompacted")).toBeLessThan(turn.findIndex((r) => r.response.case === "textDelta"));
});
