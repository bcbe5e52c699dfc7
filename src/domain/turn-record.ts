import type { JsonObject } from "./json.ts";
import type { TokenUsage } from "./token-usage.ts";

export type AgentMode = "react" | "ooda_re_act";

/** A `UserMessage.context` block: text or binary (images are passed to the model as images). */
export type ContextBlock = { label?: string; text: string } | { label?: string; mimeType: string; data: Uint8Array };

/** `budget_exceeded`: a session or tenant budget was spent before a model call (§13). */
export type StopReason = "end_turn" | "max_tokens" | "max_cycles" | "cancelled" | "tool_error_limit" | "budget_exceeded" | "error";

/** How a tool call was let through (or not). */
export type PermissionOutcome = "allowed" | "approved" | "denied" | "approval_timeout" | "policy_denied" | "cancelled" | "unknown_tool" | "invalid_arguments";

/** The client's answer to one tool request. */
export interface ToolOutcome {
  success: boolean;
  result: string;
  exitCode?: number;
  truncated: boolean;
  durationMs?: number;
}

/** One tool call of a turn, as stored in the transcript (the full result text). */
export interface ToolCallRecord {
  id: string;
  name: string;
  parameters: JsonObject;
  permission: PermissionOutcome;
  /** Absent when no result came (denied, unknown tool, …): see `error`. */
  outcome?: ToolOutcome;
  /** What the model was told when there was no client result (timeout, denial, cancel). */
  error?: string;
  startedAt: number;
  endedAt: number;
}

/**
 * The thinking of one model call whose answer the conversation kept, as the provider gave
 * it: sent back to the provider it must be unmodified and carry its `signature`.
 */
export interface ThinkingRecord {
  text: string;
  /** The provider's signature (several blocks of one call travel packed in it); absent when unsigned. */
  signature?: string;
  /** The call asked for tools (its thinking precedes the tool uses), rather than only answering. */
  toolUse: boolean;
}

/** A user message that joined a running turn (§11 steer), where it joined. */
export interface SteeredInput {
  messageId: string;
  content: string;
  context: ContextBlock[];
  /** How many of the turn's tool calls came before it: the model saw it after their results. */
  afterToolCalls: number;
}

/** Everything that happened in one turn, handed to persistence once the turn ends. */
export interface TurnRecord {
  messageId: string;
  userContent: string;
  userContext: ContextBlock[];
  mode: AgentMode;
  assistantText: string;
  /** All thinking of the turn as text, for reading. */
  assistantThinking: string;
  /** The thinking of each model call in order, with its signature, for sending back. */
  assistantThinkingBlocks: ThinkingRecord[];
  toolCalls: ToolCallRecord[];
  /** Messages that joined the turn while it ran, in order; absent when none did. */
  steered?: SteeredInput[];
  usage: TokenUsage;
  /** What the turn's model calls cost in USD (0 for models without a price). */
  costUsd: number;
  stopReason: StopReason;
  error?: { code: "model_error" | "agent_error" | "interrupted" | "budget_exceeded"; message: string; retryable: boolean };
  compactions: number;
  startedAt: number;
  endedAt: number;
  /** The turn's number in its session (1, 2, … in the order turns start); set by the session before it is stored. */
  turn?: number;
  /** Left out of what the model sees next: the model refused it, or a client rolled it back. */
  rolledBack?: boolean;
}
