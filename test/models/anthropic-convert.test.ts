// Our request → the Messages body, on the edges a transcript brings: thinking from other
// providers, thinking-only or adjacent messages, the tool-name hook, thinking budgets.
import { expect, it } from "vitest";
import { thinkingBlocks, thinkingSignature, toAnthropicRequest } from "../../src/models/anthropic/convert.ts";
import type { ModelMessage } from "../../src/models/index.ts";
import { request, user } from "./helpers.ts";

const options = { supportsImages: true, defaultMaxTokens: 8192 };

it("thinking signed by another provider, or unsigned, is not sent; a thinking-only message is dropped", () => {
  const messages: ModelMessage[] = [
    user("a"),
    {
      role: "assistant",
      parts: [
        { type: "thinking", thinking: "theirs", signature: "openai-responses/1:rs_1:ENC" },
        { type: "text", text: "A" },
      ],
    },
    user("b"),
    { role: "assistant", parts: [{ type: "thinking", thinking: "only thinking", signature: "sig" }] },
    user("c"),
  ];
  const body = toAnthropicRequest(request({ messages }), options);
  // The thinking-only message goes, and the two user messages around it merge (roles must alternate).
  expect(body.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  expect(body.messages[1]!.content).toEqual([{ type: "text", text: "A" }]);
  expect((body.messages[2]!.content as { type: string; text: string }[]).map((b) => b.text)).toEqual(["b", "c"]);
});

it("one signed block is its own signature; several blocks or redacted ones pack and unpack losslessly", () => {
  expect(thinkingSignature([{ type: "thinking", thinking: "t", signature: "s1" }])).toBe("s1");
  expect(thinkingSignature([])).toBeUndefined();
  const blocks = [
    { type: "thinking" as const, thinking: "one", signature: "s1" },
    { type: "redacted_thinking" as const, data: "opaque" },
    { type: "thinking" as const, thinking: "two", signature: "s2" },
  ];
  const packed = thinkingSignature(blocks)!;
  expect(thinkingBlocks({ type: "thinking", thinking: "one\n\ntwo", signature: packed })).toEqual(blocks);
  expect(thinkingBlocks({ type: "thinking", thinking: "x", signature: "anthropic-blocks/1:{broken" })).toEqual([]);
});

it("tool names pass through the mapping hook in requests and in transcript tool uses", () => {
  const messages: ModelMessage[] = [
    user("a"),
    { role: "assistant", parts: [{ type: "tool_use", id: "toolu_1", name: "fs.read", input: {} }] },
    { role: "user", parts: [{ type: "tool_result", toolUseId: "toolu_1", name: "fs.read", content: "ok", isError: false }] },
  ];
  const tools = [{ name: "fs.read", description: "read", parameters: { type: "object" } }];
  const body = toAnthropicRequest(request({ messages, tools }), { ...options, toolName: (n) => n.replace(".", "__") });
  expect(body.tools!.map((t) => (t as { name: string }).name)).toEqual(["fs__read"]);
  expect(body.messages[1]!.content).toEqual([{ type: "tool_use", id: "toolu_1", name: "fs__read", input: {} }]);
});

it("max_tokens: the session's limit, raised above a thinking budget that would not fit", () => {
  expect(toAnthropicRequest(request({ maxOutputTokens: 1000 }), options).max_tokens).toBe(1000);
  const thinking = toAnthropicRequest(request({ maxOutputTokens: 1000 }), { ...options, thinkingBudget: 4096 });
  expect(thinking.thinking).toEqual({ type: "enabled", budget_tokens: 4096 });
  expect(thinking.max_tokens).toBeGreaterThan(4096);
  expect(toAnthropicRequest(request(), options).thinking).toBeUndefined();
});
