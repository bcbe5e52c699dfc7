/**
 * Records shared by several layers (a turn, a permission rule, token usage, JSON values),
 * and the runtime helper they share (yielding to other clients' I/O).
 * A leaf below every layer: it imports nothing of ours, so the store can know what a turn is
 * without importing the agent.
 */
export type { JsonObject, JsonValue } from "./json.ts";
export type { Principal } from "./principal.ts";
export { addUsage, emptyUsage, type TokenUsage } from "./token-usage.ts";
export { type Budget, budgetTokens, costOf, lowerBudget, type ModelPrice, type MonthlyBudget, monthOf, reachedLimit, type Spent } from "./spend.ts";
export type { PermissionPolicy, PermissionRule } from "./permission-rule.ts";
export type {
  AgentMode,
  ContextBlock,
  PermissionOutcome,
  SteeredInput,
  StopReason,
  ThinkingRecord,
  ToolCallRecord,
  ToolOutcome,
  TurnRecord,
} from "./turn-record.ts";
export { AsyncQueue, type AsyncQueueOptions } from "./async-queue.ts";
export { KeyCounts } from "./key-counts.ts";
export { foldByFirstItem, PrefixFold } from "./prefix-fold.ts";
export { afterPendingIo } from "./loop-turn.ts";
export { joinTextParts, sharedJson, sharedUtf8, type StoredText, TextParts, textPartsUtf8 } from "./text-parts.ts";
export { mergeMetadata, metadataProblem, SESSION_LABEL_LIMITS, titleProblem } from "./session-labels.ts";
export type { ActiveSpan, ToolSpan, ToolSpanStart, TraceContext, Tracing, TurnSpan, TurnSpanStart } from "./tracing.ts";
