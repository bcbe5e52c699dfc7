import { describe, expect, it } from "vitest";
import { countTokens } from "../../src/agent/index.ts";
import { createPermissionEvaluator } from "../../src/agent/permissions.ts";
import { truncateHeadTail } from "../../src/agent/truncate.ts";
import { call, finish, reply, TestModel, text, thinking, toolCalls, usage } from "./support/test-model.ts";
import { expectValidHistory, makeAgent, start, tool, turn } from "./support/harness.ts";

describe("tokens and truncation", () => {
  it("counts with a real tokenizer, special-token text included", () => {
    expect(countTokens("")).toBe(0);
    expect(countTokens("hello world")).toBe(2);
    expect(countTokens("a <|endoftext|> b")).toBeGreaterThan(3);
  });

  it("leaves text within the budget alone and cuts long text head+tail", () => {
    expect(truncateHeadTail("short", 100)).toEqual({ text: "short", truncated: false });
    const long = Array.from({ length: 5000 }, (_, i) => `row ${i}`).join("\n");
    const cut = truncateHeadTail(long, 300);
    expect(cut.truncated).toBe(true);
    expect(cut.text.startsWith("row 0\nrow 1")).toBe(true);
    expect(cut.text.endsWith("row 4999")).toBe(true);
    const [head, tail] = cut.text.split(/\n\[… \d+ characters truncated …\]\n/);
    expect(countTokens(head!) + countTokens(tail!)).toBeLessThanOrEqual(302);
  });

  it("cuts multi-megabyte text without tokenizing it whole", () => {
    const huge = "x".repeat(20_000_000);
    const started = performance.now();
    const cut = truncateHeadTail(`BEGIN${huge}END`, 1000);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(cut.text.startsWith("BEGIN")).toBe(true);
    expect(cut.text.endsWith("END")).toBe(true);
    expect(cut.text).toMatch(/\[… \d+ characters truncated …\]/);
  });
});

describe("permission rules", () => {
  it("globs match whole tool names, '/' included, first match wins", () => {
    const evaluator = createPermissionEvaluator([
      { toolPattern: "mcp/fs/*", policy: "deny" },
      { toolPattern: "git_[pr]*", policy: "require_confirmation" },
    ]);
    expect(evaluator.decide({ name: "mcp/fs/write", category: "unspecified" }).policy).toBe("deny");
    expect(evaluator.decide({ name: "mcp/web/get", category: "unspecified" }).policy).toBe("allow");
    expect(evaluator.decide({ name: "git_push", category: "pure" }).policy).toBe("require_confirmation");
    expect(evaluator.decide({ name: "git_status", category: "pure" }).rule.category).toBe("pure");
  });
});

describe("turn details", () => {
  it("streams thinking, keeps it with its signature in history and in the record", async () => {
    const model = new TestModel([[thinking("Let me "), thinking("think.", "sig-1"), text("Answer."), usage(3, 4), finish()]]);
    const agent = makeAgent(model);
    const run = start(agent, turn("q"));
    const done = await run.done;
    expect(run.of("thinking_delta").map((d) => d.text)).toEqual(["Let me ", "think."]);
    expect(done.record.assistantThinking).toBe("Let me think.");
    expect(done.record.assistantThinkingBlocks).toEqual([{ text: "Let me think.", signature: "sig-1", toolUse: false }]);
    expect(agent.history()[1]).toEqual({
      role: "assistant",
      parts: [
        { type: "thinking", thinking: "Let me think.", signature: "sig-1" },
        { type: "text", text: "Answer." },
      ],
    });
  });

  it("tools registered during a turn are offered from the next model call on", async () => {
    const model = new TestModel([toolCalls(call("c1", "first")), reply("ok")]);
    const agent = makeAgent(model, { tools: [tool("first")] });
    const run = start(agent, turn("go"));
    await run.toolRequest();
    agent.registerTools("late", [tool("late__tool")]);
    agent.submitToolResult("c1", { success: true, result: "r", truncated: false });
    await run.done;
    expect(model.requests[0]!.tools.map((t) => t.name)).toEqual(["first"]);
    expect(model.requests[1]!.tools.map((t) => t.name)).toEqual(["first", "late__tool"]);
    expectValidHistory(agent.history());
  });

  it("reports contextTokens of the history and maxContextTokens", async () => {
    const agent = makeAgent(new TestModel([reply("a fairly short answer")]), { maxContextTokens: 1234 });
    expect(agent.contextTokens()).toBe(0);
    await start(agent, turn("a question")).done;
    expect(agent.contextTokens()).toBeGreaterThan(countTokens("a question") + countTokens("a fairly short answer"));
    expect(agent.maxContextTokens).toBe(1234);
  });
});

describe("modes", () => {
  it("maps ai_mode names and aliases", async () => {
    const { toAgentMode } = await import("../../src/agent/index.ts");
    expect(["", "react", "REACT", "ooda", "ooda_react", "ooda_re_act", "chaos"].map(toAgentMode)).toEqual([
      "react",
      "react",
      "react",
      "ooda_re_act",
      "ooda_re_act",
      "ooda_re_act",
      undefined,
    ]);
  });
});
