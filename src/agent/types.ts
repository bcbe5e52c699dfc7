/**
 * The agent layer's contract with the session layer. No protobuf or gRPC type appears
 * here: `src/rpc` maps these to the wire.
 */
import type { AgentMode, ContextBlock, PermissionRule, StopReason, ToolOutcome, Tracing, TurnRecord } from "../domain/index.ts";
import type { JsonObject, ModelMessage, ResolvedModel, TokenUsage } from "../models/index.ts";
import type { SpendGate } from "./spend.ts";

// Shared records live in src/domain; re-exported here for the layers that import them from the agent.
export type {
  AgentMode,
  ContextBlock,
  PermissionOutcome,
  PermissionPolicy,
  PermissionRule,
  SteeredInput,
  StopReason,
  ToolCallRecord,
  ToolOutcome,
  TraceContext,
  Tracing,
  TurnRecord,
  TurnSpan,
} from "../domain/index.ts";

export type ToolCategory = "unspecified" | "physical" | "pure";

/** A tool that the client executes. `timeoutMs` 0 means the default (120000). */
export interface ClientTool {
  name: string;
  description: string;
  parametersSchema: JsonObject;
  timeoutMs: number;
  category: ToolCategory;
}

/**
 * A tool the server runs itself (the team tools): offered to the model and screened by the
 * permission rules like a client tool, but never sent to the client, which only sees the
 * `calling_tool` activity. `run` owns no timeout; it must settle when `signal` aborts.
 */
export interface ServerTool {
  name: string;
  description: string;
  parametersSchema: JsonObject;
  run(parameters: JsonObject, signal: AbortSignal): Promise<ToolOutcome>;
  /** With no environment or configured rule matching it, a call needs approval (the allow-all defaults do not apply). */
  needsRule?: boolean;
}

/**
 * Server tools that change while a session lives (MCP servers' tools), asked for again before
 * each model call. `refresh` never throws: a source that cannot list a server offers fewer tools.
 */
export interface LiveTools {
  refresh(signal: AbortSignal): Promise<ServerTool[]>;
}

export interface TurnInput {
  messageId: string;
  content: string;
  context: ContextBlock[];
  mode: AgentMode;
  /** Replaces the session tools for this turn only; undefined or empty = the session tools. */
  tools?: ClientTool[];
  /** Wins over the pending system context from `registerTools`. */
  systemContext?: string;
  /**
   * User messages that join this turn while it runs (§11 steer). The loop takes what waits
   * before each model call, and once more before it ends: anything taken then gets one more
   * call, so every message it takes is answered in this turn.
   */
  steers?: { take(): SteerInput[] };
}

/** A user message joining a running turn. */
export interface SteerInput {
  messageId: string;
  content: string;
  context: ContextBlock[];
}

export type ActivityState = "thinking" | "calling_tool" | "idle" | "waiting_approval";

/**
 * The client's answer to an approval question. `modifier` (approved calls only) is merged
 * into the call's arguments under the rules of `applyModifier`.
 */
export interface PermissionAnswer {
  approved: boolean;
  modifier?: JsonObject;
}

/**
 * Why a call was refused without reaching the client (wire `ToolDenied.reason`): a `deny`
 * rule, a denied or timed-out approval, a tool the client does not have, arguments that are
 * not a JSON object, or a cancelled turn.
 */
export type ToolDeniedReason = "policy" | "approval_denied" | "approval_timeout" | "unknown_tool" | "invalid_arguments" | "cancelled";

/** What a `require_confirmation` call asks the client to approve. */
export interface ApprovalQuestion {
  toolCallId: string;
  toolName: string;
  parameters: JsonObject;
  /** The matching rule's reason, or a default text. */
  reason: string;
  /** How long the server waits for the decision before it denies the call. */
  timeoutMs: number;
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
  /** `observing`: the calls of an OODA observe step; `approval`: what a `waiting_approval` asks. */
  | { type: "activity"; state: ActivityState; detail: string; progress?: number; observing?: boolean; approval?: ApprovalQuestion }
  /** A call refused without a request to the client; `detail` is what the model was told. */
  | { type: "tool_denied"; toolCallId: string; toolName: string; reason: ToolDeniedReason; detail: string }
  /**
   * A tool call got its result, whoever gave it, or timed out / was cancelled after its
   * request went out (`success: false`, the reason as `result`). `result` is cut to
   * `limits.toolResultEchoBytes` (`truncated`).
   */
  | { type: "tool_finished"; toolCallId: string; toolName: string; success: boolean; result: string; truncated: boolean; workerId?: string }
  /** A steered message joined the turn: sent just before the model call that first sees it. */
  | { type: "steered"; messageId: string; content: string; turnMessageId: string }
  /** The end of an approval wait (a refusal also gets its `tool_denied`). */
  | { type: "approval_resolved"; toolCallId: string; approved: boolean; reason?: ToolDeniedReason }
  /** One model call ended (also aborted or failed ones); `stopReason` is the provider's finish or how it ended. */
  | {
      type: "model_call_completed";
      /** Canonical `provider/model`. */
      model: string;
      modelId: string;
      provider: string;
      usage: TokenUsage;
      latencyMs: number;
      stopReason: string;
    }
  | {
      type: "context_compacted";
      level: "tool_results" | "thinking" | "summary";
      messagesBefore: number;
      messagesAfter: number;
      /** Messages rewritten (tool results, thinking) or summarised. */
      messagesAffected: number;
      tokensBefore: number;
      tokensAfter: number;
      summary?: string;
    }
  | { type: "error"; code: "model_error" | "agent_error" | "budget_exceeded"; message: string; retryable: boolean }
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
  /** UTF-8 bytes of a result that `tool_finished` carries to every client (default 16384; 0 = none). */
  toolResultEchoBytes?: number;
  maxOutputTokens?: number;
  /** Tools a session may hold; `registerTools` beyond it throws `invalid_argument` (default: no cap). */
  maxTools?: number;
  /** Tools one request (start, user message, register_tools) may carry (default: no cap). */
  maxToolsPerRequest?: number;
}

export interface AgentOptions {
  model: ResolvedModel;
  tools: ClientTool[];
  history: readonly ModelMessage[];
  /** The client's own system prompt (v0.2 `system` history messages), after the environment instructions. */
  systemPrompt?: string[];
  projectContext: string[];
  /** Environment instructions, added after the base instructions. */
  instructions?: string;
  /** A `register_tools` system context not yet consumed by a turn (restored sessions). */
  pendingSystemContext?: string;
  maxContextTokens: number;
  /** Environment rules; the defaults of §4 apply after them. */
  permissions: PermissionRule[];
  limits: AgentLimits;
  /** Tools the server runs (they replace client tools of the same name). */
  serverTools?: ServerTool[];
  /** Server tools that may change between model calls; a client tool of the same name wins over them. */
  liveTools?: LiveTools;
  /**
   * Receives the cause of every `agent_error` (and of failures after-turn compaction
   * swallowed), for logs: clients only get a generic message.
   */
  onAgentError?: (error: unknown) => void;
  /** Traces each tool call as an `execute_tool` span under the active span (absent: no tracing). */
  tracing?: Tracing;
  /** Budgets checked before every model call and the spend counted after it (§13); none: no limits. */
  spend?: SpendGate;
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
  /** `modifier` (approvals only) is merged into the call's arguments, see `PermissionAnswer`. */
  decidePermission(toolCallId: string, approved: boolean, modifier?: JsonObject): Delivery;
  /** The tool calls waiting for a client result and the calls waiting for an approval, by id. */
  openClientWaits(): { toolCalls: string[]; approvals: string[] };
  /** Aborts the running turn (no-op without one); it ends with `turn_complete{cancelled}`. */
  cancelTurn(reason: string): void;
  /** Throws `invalid_argument` (and changes nothing) when the session would hold more than `limits.maxTools`. */
  registerTools(source: string | undefined, tools: ClientTool[], systemContext?: string): void;
  /** The session's client tools now (registrations applied; server tools not included). */
  clientTools(): ClientTool[];
  /** Tokens the current history takes, counted with the tokenizer. */
  contextTokens(): number;
  readonly maxContextTokens: number;
  /**
   * The conversation so far, valid to send to a provider. Read-only: the agent never changes
   * a message once it is in the history (compaction replaces messages), so callers may keep
   * per-message results (token counts, encodings) keyed by message.
   */
  history(): readonly ModelMessage[];
  /**
   * Replaces the conversation between turns (a rollback): `history` must be valid for a
   * provider, and the next turn sees it instead. Throws `RozError("turn_in_progress")` while a
   * turn runs. Tool call ids stay unique against every id the session has handed out.
   */
  replaceHistory(history: readonly ModelMessage[]): void;
  /** The `registerTools` system context the next turn will use, if any. */
  readonly pendingSystemContext: string | undefined;
  /** Cancels everything and releases timers; the agent is unusable afterwards. */
  dispose(): void;
}
