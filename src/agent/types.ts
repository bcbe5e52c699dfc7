/**
 * The agent layer's contract with the session layer. No protobuf or gRPC type appears
 * here: `src/rpc` maps these to the wire.
 */
import type { JsonObject, ModelMessage, ResolvedModel, TokenUsage } from "../models/index.ts";

export type ToolCategory = "unspecified" | "physical" | "pure";

/** A tool that the client executes. `timeoutMs` 0 means the default (120000). */
export interface ClientTool {
  name: string;
  description: string;
  parametersSchema: JsonObject;
  timeoutMs: number;
  category: ToolCategory;
}

export type PermissionPolicy = "allow" | "require_confirmation" | "deny";

/** A rule the server enforces; `toolPattern` is a glob over tool names. First match wins. */
export interface PermissionRule {
  toolPattern: string;
  policy: PermissionPolicy;
  category?: string;
  reason?: string;
}

/** The client's answer to one tool request. */
export interface ToolOutcome {
  success: boolean;
  result: string;
  exitCode?: number;
  truncated: boolean;
  durationMs?: number;
}

export type AgentMode = "react" | "ooda_re_act";

/** A `UserMessage.context` block: text or binary (images are passed to the model as images). */
export type ContextBlock =
  | { label?: string; text: string }
  | { label?: string; mimeType: string; data: Uint8Array };

export interface TurnInput {
  messageId: string;
  content: string;
  context: ContextBlock[];
  mode: AgentMode;
  /** Replaces the session tools for this turn only; undefined or empty = the session tools. */
  tools?: ClientTool[];
  /** Wins over the pending system context from `registerTools`. */
  systemContext?: string;
}

export type StopReason = "end_turn" | "max_tokens" | "max_cycles" | "cancelled" | "tool_error_limit" | "error";

export type ActivityState = "thinking" | "calling_tool" | "idle" | "waiting_approval";

/** How a tool call was let through (or not). */
export type PermissionOutcome =
  | "allowed"
  | "approved"
  | "denied"
  | "approval_timeout"
  | "policy_denied"
  | "cancelled"
  | "unknown_tool";

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

/** Everything that happened in one turn, handed to persistence once the turn ends. */
export interface TurnRecord {
  messageId: string;
  userContent: string;
  userContext: ContextBlock[];
  mode: AgentMode;
  assistantText: string;
  assistantThinking: string;
  toolCalls: ToolCallRecord[];
  usage: TokenUsage;
  stopReason: StopReason;
  /** `interrupted`: the server stopped (or its node was lost) while the turn ran. */
  error?: { code: "model_error" | "agent_error" | "interrupted"; message: string; retryable: boolean };
  compactions: number;
  startedAt: number;
  endedAt: number;
}

/**
 * Events of one turn, in the order the client must see them. `turn_complete` is always
 * last; this agent runs its after-turn compaction before it, so its `context_compacted`
 * events (and the usage of a summary call) belong to the turn. An `error` event precedes
 * a `turn_complete{stopReason:"error"}`.
 */
export type AgentEvent =
  | { type: "text_delta"; messageId: string; text: string }
  | { type: "thinking_delta"; messageId: string; text: string }
  | { type: "tool_request"; toolCallId: string; toolName: string; parameters: JsonObject; timeoutMs: number }
  | { type: "activity"; state: ActivityState; detail: string; progress?: number }
  | {
      type: "context_compacted";
      level: "tool_results" | "thinking" | "summary";
      messagesBefore: number;
      messagesAfter: number;
      tokensBefore: number;
      tokensAfter: number;
      summary?: string;
    }
  | { type: "error"; code: "model_error" | "agent_error"; message: string; retryable: boolean }
  | { type: "turn_complete"; messageId: string; usage: TokenUsage; stopReason: StopReason; record: TurnRecord };

export interface AgentLimits {
  /** Model cycles per turn before a final tool-free summary call (default 200). */
  maxCycles: number;
  /** Consecutive all-failed tool cycles before `tool_error_limit` (default 3). */
  toolErrorLimit: number;
  /** How long a `require_confirmation` call waits for a decision (default 300000). */
  approvalTimeoutMs: number;
  /** Tool timeout when the schema says 0 (default 120000). */
  defaultToolTimeoutMs: number;
  /** Token budget of one tool result shown to the model (head+tail cut beyond it). */
  toolResultMaxTokens: number;
  maxOutputTokens?: number;
}

export interface AgentOptions {
  model: ResolvedModel;
  tools: ClientTool[];
  history: ModelMessage[];
  projectContext: string[];
  /** Environment instructions, added after the base instructions. */
  instructions?: string;
  /** A `register_tools` system context not yet consumed by a turn (restored sessions). */
  pendingSystemContext?: string;
  maxContextTokens: number;
  /** Environment rules; the defaults of §4 apply after them. */
  permissions: PermissionRule[];
  limits: AgentLimits;
  /**
   * Receives the cause of every `agent_error` (and of failures after-turn compaction
   * swallowed), for logs: clients only get a generic message.
   */
  onAgentError?: (error: unknown) => void;
}

/** The answer to a tool result or decision that came from the client. */
export type Delivery = "accepted" | "unknown" | "no_active_turn";

/**
 * One session's agent: history, tools and the running turn. Methods other than
 * `runTurn` may be called at any time from the session layer's request reader.
 */
export interface Agent {
  /** The rules the agent enforces, reported in `SessionStarted.permissions`. */
  readonly permissions: PermissionRule[];
  /**
   * Runs one turn; it starts at once (events are buffered until read). Only one at a
   * time: throws `RozError("turn_in_progress")` while one runs (until its
   * `turn_complete` was emitted), `agent_error` after `dispose`. The iterator ends right
   * after `turn_complete`; stopping to read it cancels the turn.
   */
  runTurn(input: TurnInput): AsyncIterable<AgentEvent>;
  submitToolResult(toolCallId: string, outcome: ToolOutcome): Delivery;
  decidePermission(toolCallId: string, approved: boolean): Delivery;
  /** The tool calls waiting for a client result and the calls waiting for an approval, by id. */
  openClientWaits(): { toolCalls: string[]; approvals: string[] };
  /** Aborts the running turn (no-op without one); it ends with `turn_complete{cancelled}`. */
  cancelTurn(reason: string): void;
  registerTools(source: string | undefined, tools: ClientTool[], systemContext?: string): void;
  /** Tokens the current history takes, counted with the tokenizer. */
  contextTokens(): number;
  readonly maxContextTokens: number;
  /** A copy of the conversation so far, valid to send to a provider. */
  history(): ModelMessage[];
  /** A copy of the session tools (after every `registerTools`). */
  tools(): ClientTool[];
  /** The `registerTools` system context the next turn will use, if any. */
  readonly pendingSystemContext: string | undefined;
  /** Cancels everything and releases timers; the agent is unusable afterwards. */
  dispose(): void;
}
