// Token counting is bounded per text: a 100 KB or 4 MB whitespace-free "word" (which made
// BPE merging stall the server for seconds to minutes) in a user message or a tool result is
// counted in milliseconds, while counts of ordinary text stay close to exact.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countTokens } from "../../src/agent/index.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { nextOf, readTurn, rq, startSession, tool, turnCompleteOf } from "../support/session-protocol.ts";
import { STALL_BOUND_MS, startBystander } from "../support/bystander.ts";

// 100 KB already held BPE merging for seconds; the larger word checks that the bound does not grow with the text.
// `npm run bench -- abuse` replays the 4 MB word.
const WORDS = { "100 KB": "a".repeat(100_000), "1 MB": "x".repeat(1_000_000) };

/** A user message whose fenced script makes the scripted model call `read`, then answer. */
const scriptedMessage = (extra: string): string =>
  `\`\`\`script\n${JSON.stringify({ responses: [[{ tool_call: { name: "read", arguments: {} } }], [{ text: "done" }]] })}\n\`\`\`\n${extra}`;

describe("countTokens", () => {
  it("counts long words in bounded time", () => {
    for (const [label, word] of Object.entries(WORDS)) {
      const started = performance.now();
      const n = countTokens(word);
      expect(performance.now() - started, label).toBeLessThan(STALL_BOUND_MS);
      // Runs of one letter merge into tokens of a few characters.
      expect(n, label).toBeGreaterThan(word.length / 64);
      expect(n, label).toBeLessThan(word.length);
    }
  });

  it("estimates long ordinary text within 10 % of its exact count", () => {
    const sentence = (i: number) => `Sentence ${i} talks about module_${i % 37} and returns ${i * 7} values; `;
    const text = Array.from({ length: 4000 }, (_, i) => sentence(i)).join("");
    expect(text.length).toBeGreaterThan(200_000);
    let exact = 0;
    for (let i = 0; i < text.length; i += 16_000) exact += countTokens(text.slice(i, i + 16_000));
    const estimate = countTokens(text);
    expect(Math.abs(estimate - exact) / exact).toBeLessThan(0.1);
  });
});

describe("long words through a session", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ ROZ_MAX_MESSAGE_BYTES: "8MiB" });
  });
  afterAll(() => server?.close());

  for (const [label, word] of Object.entries(WORDS)) {
    it(`a ${label} word in a user message and in a tool result: the turn completes, a bystander keeps streaming`, async () => {
      const bystander = await startBystander(server.url);
      const factory = sessionClientFactory("grpc-js", server.url);
      try {
        const attacker = factory.open();
        await startSession(attacker, { tools: [tool("read")] });
        attacker.send(rq.user(scriptedMessage(word)));
        const request = await nextOf(attacker, "toolRequest", 60_000);
        attacker.send(rq.toolResult(request.toolCallId, word));
        const turn = await readTurn(attacker, 60_000);
        expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
        // A second turn re-counts nothing: the history's counts are cached per message.
        attacker.send(rq.user("again"));
        expect(turnCompleteOf(await readTurn(attacker, 60_000)).stopReason).toBe("end_turn");
        attacker.end();
        await attacker.status;
      } finally {
        factory.close();
      }
      const report = await bystander.stop();
      expect(report.p99Ms, JSON.stringify(report)).toBeLessThan(STALL_BOUND_MS);
    }, 120_000);
  }
});
