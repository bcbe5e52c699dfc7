/** Builders for store tests: deterministic turn records whose shape depends on a number. */
import { randomUUID } from "node:crypto";
import type { ToolCallRecord, TurnRecord } from "../../src/agent/index.ts";
import type { ThinkingRecord } from "../../src/domain/index.ts";
import type { TokenUsage } from "../../src/models/index.ts";

export const usageFor = (n: number): TokenUsage => ({
  inputTokens: 100 * n,
  outputTokens: 10 * n,
  cacheReadTokens: 3 * n,
  cacheCreationTokens: n,
});

/** Tool calls of turn `n`: `n % 4` of them, alternating with and without a client result. */
export function toolCallsFor(n: number): ToolCallRecord[] {
  return Array.from({ length: n % 4 }, (_, i): ToolCallRecord => {
    const base = { id: `call_${n}_${i}`, name: `tool_${i}`, parameters: { path: `/tmp/${n}`, depth: i, deep: { ok: true } } };
    return i % 2 === 0
      ? {
          ...base,
          permission: "allowed",
          outcome: { success: true, result: `result ${n}.${i}\n`.repeat(3), exitCode: 0, truncated: false, durationMs: 5 + i },
          startedAt: 1_000 + n,
          endedAt: 2_000 + n,
        }
      : { ...base, permission: "denied", error: "tool not permitted", startedAt: 1_000 + n, endedAt: 1_000 + n };
  });
}

/** Thinking of turn `n`'s model calls: a signed call before its tools, then an unsigned answer. */
export const thinkingBlocksFor = (n: number): ThinkingRecord[] => [
  { text: `thinking about ${n}`, signature: `sig/${n}:${"Eq+Bx/=".repeat(40)}`, toolUse: true },
  { text: "then answering", toolUse: false },
];

/** A complete turn record numbered `n`; `overrides` replace fields. */
export function turnFor(n: number, overrides: Partial<TurnRecord> = {}): TurnRecord {
  return {
    messageId: `msg_${n}_${randomUUID()}`,
    userContent: `question ${n}`,
    userContext: [{ label: "file.ts", text: `context ${n}` }],
    mode: n % 2 === 0 ? "ooda_re_act" : "react",
    assistantText: `answer ${n}`,
    assistantThinking: n % 3 === 0 ? `thinking about ${n}\n\nthen answering` : "",
    assistantThinkingBlocks: n % 3 === 0 ? thinkingBlocksFor(n) : [],
    toolCalls: toolCallsFor(n),
    usage: usageFor(n),
    costUsd: n / 1000,
    stopReason: "end_turn",
    compactions: n % 5 === 0 ? 1 : 0,
    startedAt: 10_000 + n,
    endedAt: 20_000 + n,
    ...overrides,
  };
}

export const sumUsage = (list: TokenUsage[]): TokenUsage =>
  list.reduce(
    (a, b) => ({
      inputTokens: a.inputTokens + b.inputTokens,
      outputTokens: a.outputTokens + b.outputTokens,
      cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
      cacheCreationTokens: a.cacheCreationTokens + b.cacheCreationTokens,
    }),
    { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 },
  );

export const uniqueName = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;
