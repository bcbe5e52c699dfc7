/**
 * The session layer's domain: commands a client sends and events it receives, free of
 * protobuf. `src/rpc` decodes requests into `SessionCommand` and encodes `SessionEvent`.
 */
import type { AgentEvent, AgentMode, ClientTool, ContextBlock, PermissionRule, ToolOutcome, TraceContext } from "../agent/index.ts";
import type { SessionErrorCode } from "../errors/index.ts";
import type { Budget } from "../domain/index.ts";
import type { JsonObject, ModelMessage, TokenUsage } from "../models/index.ts";

export type SessionStatus = "active" | "detached" | "completed" | "cancelled" | "error";

export interface StartCommand {
  type: "start";
  environmentId: string;
  hostId?: string;
  model?: string;
  /** What people call the session, and its string labels (checked against the limits when decoded). */
  title?: string;
  metadata?: Record<string, string>;
  /** The most it may spend over its life (its environment's budget applies too; the lower limit wins). */
  budget?: Budget;
  tools: ClientTool[];
  history: ModelMessage[];
  /** The text of `system` messages in `history`: it joins the system prompt. */
  systemPrompt: string[];
  /** History messages and parts that were left out (told to the client after SessionStarted). */
  skipped: string[];
  projectContext: string[];
  maxContextTokens?: number;
  /** Open the session as a copy of another one's conversation through `throughTurn` (default: its last ended turn). */
  fork?: { sessionId: string; throughTurn?: number };
}

/** How a user message is delivered while a turn runs (§11); absent: `turn_in_progress`, as in v0.2. */
export type InputDelivery = "queue" | "steer" | "interrupt";

/** What became of a user message (§11). */
export type InputState = "queued" | "steered" | "started" | "dropped";

export type SessionCommand =
  | StartCommand
  | {
      type: "user_message";
      messageId?: string;
      content: string;
      context: ContextBlock[];
      /** The raw `ai_mode`; an unknown one runs as `react`. */
      aiMode?: string;
      tools?: ClientTool[];
      systemContext?: string;
      delivery?: InputDelivery;
      /** The W3C trace context of the request that carried it: the turn it starts is traced as its child. */
      trace?: TraceContext;
    }
  | { type: "tool_result"; toolCallId: string; outcome: ToolOutcome }
  /** `clearQueue`: also drop every waiting message. */
  | { type: "cancel_turn"; reason: string; clearQueue: boolean }
  /** Hide the last `turns` completed turns from the model (the transcript keeps them, marked). */
  | { type: "rollback"; turns: number }
  | { type: "cancel_session"; reason: string }
  | { type: "ping" }
  | { type: "feedback"; sessionId: string; messageId: string; rating: string }
  /** `modifier`: merged into an approved call's arguments (session-behaviour.md §9). */
  | { type: "permission_decision"; toolCallId: string; approved: boolean; modifier?: JsonObject }
  | { type: "register_tools"; source?: string; tools: ClientTool[]; systemContext?: string }
  /** Re-attach this stream to an existing session (first message instead of `start`). */
  | { type: "resume"; sessionId: string; afterSeq?: number }
  /** Messages this server accepts but does not act on (WebRTC, cameras). */
  | { type: "unsupported"; name: string };

/** The in-band error codes of session-behaviour.md §8: the registry's `inBand` reasons. */
export type { SessionErrorCode } from "../errors/index.ts";

/** Everything a session stream carries, in order. */
export type SessionEvent =
  | AgentEvent
  | { type: "session_started"; sessionId: string; model: string; permissions: PermissionRule[] }
  /** `requestId`: the request it answers (a user message's id, or a tool call id). */
  | { type: "session_error"; code: SessionErrorCode; message: string; retryable: boolean; requestId?: string }
  /** What became of a user message: every attached stream gets it (§11). */
  | { type: "input_update"; messageId: string; state: InputState; queuePosition?: number; content?: string; turnMessageId?: string }
  /** The answer to `rollback`. */
  | { type: "rolled_back"; turns: number; remainingTurns: number }
  | { type: "keepalive"; tokensUsed?: number; tokensMax?: number }
  | { type: "pong" }
  /** The last event of a session: how it ended and the tokens of all its turns. */
  | { type: "session_completed"; status: Exclude<SessionStatus, "active" | "detached">; reason: string; usage: TokenUsage; turns: number }
  /** The session's agent spawned its first worker: the client can watch the task. */
  | { type: "team_started"; taskId: string }
  /** An MCP server whose tools the session was offered is degraded: its tools left the list (§12). */
  | { type: "mcp_server_degraded"; serverName: string; failureCount: number; lastError: string }
  /** A worker's client-tool call, sent to the parent session's client. */
  | { type: "worker_tool_request"; workerId: string; toolCallId: string; toolName: string; parameters: JsonObject; timeoutMs: number };

/**
 * A session event with its per-session sequence number (1-based, gap-free). Events a
 * session numbered also say whose they are, when they happened and, for the events of a
 * turn (its first to its `turn_complete`), the turn's index (1-based); stream-local
 * answers before `start` (seq 0) have none of these.
 */
export interface SequencedEvent {
  seq: number;
  event: SessionEvent;
  sessionId?: string;
  /** Server time in ms since the epoch. */
  at?: number;
  turnIndex?: number;
}

/**
 * What a stream writes: a numbered response as an event (live, stream-local, or still in the
 * session's memory log), as logged bytes (the flat response, encoded once), or both (a kept
 * event). At least one of `event` and `bytes` is set; events read back from the store have
 * only their bytes. Empty `bytes`: the event has no flat response (`session_completed`).
 */
export interface OutgoingEvent extends Omit<SequencedEvent, "event"> {
  event?: SessionEvent;
  bytes?: Uint8Array;
}

/** One kept response as the log holds it: its seq and its encoded bytes (encoded once), with the event while in memory. */
export interface LoggedEvent extends OutgoingEvent {
  bytes: Uint8Array;
}

export type AgentModeInput = AgentMode;
