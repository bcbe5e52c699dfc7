import type { ModelMessage, ModelPart } from "../models/index.ts";
import type { TokenCounter } from "./tokens.ts";
import type { AgentEvent } from "./types.ts";

/** Shares of `maxContextTokens` at which each level starts (session-behaviour.md §5). */
export const compactionThresholds = { toolResults: 0.5, thinking: 0.65, summary: 0.85 } as const;

/** Recent turns (counting the running one) whose tool results and thinking are kept, when older ones exist. */
const KEEP_TURNS = 3;
/** Within those turns, a long tool loop still gets its older results cleared beyond this. */
const KEEP_RECENT_MESSAGES = 12;
/** Recent turns (counting the running one) that the summary level keeps verbatim. */
const SUMMARY_KEEP_TURNS = 2;
/** What a cleared tool result says instead of its content. */
export const CLEARED_TOOL_RESULT = "[tool result cleared to save context]";
/** The user half of the summary pair that replaces summarised turns. */
export const SUMMARY_REQUEST = "Summarise our conversation so far.";

type CompactedEvent = Extract<AgentEvent, { type: "context_compacted" }>;

export interface CompactionDeps {
  maxContextTokens: number;
  tokens: TokenCounter;
  /** Summarises a transcript with a tool-free model call; undefined when that failed (blank counts as failed). */
  summarise: (older: readonly ModelMessage[]) => Promise<string | undefined>;
  emit: (event: CompactedEvent) => void;
}

/**
 * Brings history under the thresholds, cheapest level first, each level only while the
 * history is still above its threshold and only when it makes the history smaller: clear old
 * tool results, drop old thinking, summarise older turns. Each applied level is emitted
 * with its true before/after counts. Tool-use/tool-result pairs are never split: the
 * first two levels only rewrite contents, and the summary cuts at a turn boundary.
 * Returns the new history and how many levels were applied.
 */
export async function compactHistory(messages: ModelMessage[], deps: CompactionDeps): Promise<{ messages: ModelMessage[]; applied: number }> {
  const limit = (share: number): number => share * deps.maxContextTokens;
  let current = messages;
  let tokens = deps.tokens.messages(current);
  let applied = 0;
  /** `affected`: messages rewritten, or replaced by the summary pair. */
  const apply = (level: CompactedEvent["level"], next: ModelMessage[] | undefined, affected: (next: ModelMessage[]) => number, summary?: string): void => {
    if (next === undefined) return;
    const after = deps.tokens.sumOf(next);
    // A rewrite that does not shrink the history (e.g. a summary as long as what it
    // replaces) would only lose detail.
    if (after >= tokens) return;
    deps.emit({
      type: "context_compacted",
      level,
      messagesBefore: current.length,
      messagesAfter: next.length,
      messagesAffected: affected(next),
      tokensBefore: tokens,
      tokensAfter: after,
      ...(summary !== undefined ? { summary } : {}),
    });
    current = next;
    tokens = after;
    applied++;
  };
  const rewritten = (next: ModelMessage[]): number => next.filter((m, i) => m !== current[i]).length;
  if (tokens > limit(compactionThresholds.toolResults)) apply("tool_results", clearOldToolResults(current), rewritten);
  if (tokens > limit(compactionThresholds.thinking)) apply("thinking", dropOldThinking(current), rewritten);
  if (tokens > limit(compactionThresholds.summary)) {
    const cut = summaryCut(current);
    if (cut !== undefined) {
      const summary = (await deps.summarise(current.slice(0, cut)))?.trim();
      if (summary) apply("summary", [...summaryPair(summary), ...current.slice(cut)], () => cut, summary);
    }
  }
  return { messages: current, applied };
}

/** Indexes of the user messages that open a turn (not the tool-result messages). */
export function turnStarts(messages: readonly ModelMessage[]): number[] {
  const starts: number[] = [];
  messages.forEach((m, i) => {
    if (m.role === "user" && m.parts.some((p) => p.type !== "tool_result")) starts.push(i);
  });
  return starts;
}

/**
 * Where the untouched tail begins for the two rewriting levels: the last few turns, or,
 * when that would leave nothing to rewrite (a short, heavy history), the running turn.
 */
function protectedFrom(messages: readonly ModelMessage[], keepTurns: number): number {
  const starts = turnStarts(messages);
  const byTurns = starts.length >= keepTurns ? starts[starts.length - keepTurns]! : 0;
  return Math.max(byTurns, messages.length - KEEP_RECENT_MESSAGES);
}

/** Rewrites outside the usual protected turns, else outside the running turn only. */
function rewriteOld(messages: readonly ModelMessage[], rewrite: (m: ModelMessage) => ModelMessage | undefined): ModelMessage[] | undefined {
  return rewriteBefore(messages, protectedFrom(messages, KEEP_TURNS), rewrite) ?? rewriteBefore(messages, protectedFrom(messages, 1), rewrite);
}

/** Replaces the content of old tool results with a marker; undefined when nothing changed. */
export function clearOldToolResults(messages: readonly ModelMessage[]): ModelMessage[] | undefined {
  return rewriteOld(messages, (m) => {
    if (m.role !== "user") return undefined;
    let changed = false;
    const parts = m.parts.map((p): ModelPart => {
      if (p.type !== "tool_result" || p.content.length <= CLEARED_TOOL_RESULT.length) return p;
      changed = true;
      return { ...p, content: CLEARED_TOOL_RESULT };
    });
    return changed ? { role: m.role, parts } : undefined;
  });
}

/**
 * Removes thinking from old assistant messages; a message that would be left empty keeps
 * it (providers reject empty messages). Undefined when nothing changed.
 */
export function dropOldThinking(messages: readonly ModelMessage[]): ModelMessage[] | undefined {
  return rewriteOld(messages, (m) => {
    if (m.role !== "assistant") return undefined;
    const parts = m.parts.filter((p) => p.type !== "thinking");
    return parts.length === m.parts.length || parts.length === 0 ? undefined : { role: m.role, parts };
  });
}

function rewriteBefore(messages: readonly ModelMessage[], end: number, rewrite: (m: ModelMessage) => ModelMessage | undefined): ModelMessage[] | undefined {
  let changed = false;
  const out = messages.map((m, i) => {
    if (i >= end) return m;
    const next = rewrite(m);
    if (next === undefined) return m;
    changed = true;
    return next;
  });
  return changed ? out : undefined;
}

/**
 * Where the summarised part ends: the start of the last `SUMMARY_KEEP_TURNS` turns.
 * Undefined when there is nothing older, or only the pair of a previous summary.
 */
export function summaryCut(messages: readonly ModelMessage[]): number | undefined {
  const starts = turnStarts(messages);
  if (starts.length < SUMMARY_KEEP_TURNS) return undefined;
  const cut = starts[starts.length - SUMMARY_KEEP_TURNS]!;
  if (cut === 0) return undefined;
  if (cut <= 2 && isSummaryRequest(messages[0]!)) return undefined;
  return cut;
}

/** The user/assistant pair that stands for the summarised turns. */
export function summaryPair(summary: string): ModelMessage[] {
  return [
    { role: "user", parts: [{ type: "text", text: SUMMARY_REQUEST }] },
    { role: "assistant", parts: [{ type: "text", text: summary }] },
  ];
}

const isSummaryRequest = (m: ModelMessage): boolean =>
  m.role === "user" && m.parts.length === 1 && m.parts[0]!.type === "text" && m.parts[0]!.text === SUMMARY_REQUEST;
