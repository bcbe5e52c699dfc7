/**
 * The session layer's domain: commands a client sends and events it receives, free of
 * protobuf. `src/rpc` decodes requests into `SessionCommand` and encodes `SessionEvent`.
 */
import type {
  AgentEvent,
  AgentMode,
  ClientTool,
  ContextBlock,
  PermissionRule,
  ToolOutcome,
} from "../agent/index.ts";
import type { ModelMessage } from "../models/index.ts";

export interface StartCommand {
  type: "start";
  environmentId: string;
  hostId?: string;
  model?: string;
  tools: ClientTool[];
  history: ModelMessage[];
  projectContext: string[];
  maxContextTokens?: number;
}

export type SessionCommand =
  | StartCommand
  | {
      type: "user_message";
      messageId?: string;
      content: string;
      context: ContextBlock[];
      /** The raw `ai_mode`; validated by the session. */
      aiMode?: string;
      tools?: ClientTool[];
      systemContext?: string;
    }
  | { type: "tool_result"; toolCallId: string; outcome: ToolOutcome }
  | { type: "cancel_turn"; reason: string }
  | { type: "cancel_session"; reason: string }
  | { type: "ping" }
  | { type: "feedback"; sessionId: string; messageId: string; rating: string }
  | { type: "permission_decision"; toolCallId: string; approved: boolean }
  | { type: "register_tools"; source?: string; tools: ClientTool[]; systemContext?: string }
  /** Re-attach this stream to an existing session (first message instead of `start`). */
  | { type: "resume"; sessionId: string; afterSeq?: number }
  /** Messages this server accepts but does not act on (WebRTC, cameras). */
  | { type: "unsupported"; name: string };

/** The in-band error codes of session-behaviour.md §8. */
export type SessionErrorCode =
  | "unauthenticated"
  | "invalid_argument"
  | "not_found"
  | "model_unavailable"
  | "already_started"
  | "no_session"
  | "turn_in_progress"
  | "no_active_turn"
  | "unknown_tool_call"
  | "model_error"
  | "agent_error"
  | "resource_exhausted"
  | "internal"
  | "events_expired"
  | "interrupted";

/** Everything a session stream carries, in order. */
export type SessionEvent =
  | AgentEvent
  | { type: "session_started"; sessionId: string; model: string; permissions: PermissionRule[] }
  | { type: "session_error"; code: SessionErrorCode; message: string; retryable: boolean }
  | { type: "keepalive"; tokensUsed?: number; tokensMax?: number }
  | { type: "pong" }
  | { type: "presence"; level: "full" | "mini" | "hidden"; reason: string };

/** A session event with its per-session sequence number (1-based, gap-free). */
export interface SequencedEvent {
  seq: number;
  event: SessionEvent;
}

/** One kept response as the log holds it: its seq and its encoded bytes (encoded once). */
export interface LoggedEvent {
  seq: number;
  bytes: Uint8Array;
}

/**
 * What a stream writes: a numbered response as an event (live or stream-local), as logged
 * bytes (replayed), or both (a live kept event). At least one of `event` and `bytes` is set.
 */
export interface OutgoingEvent {
  seq: number;
  event?: SessionEvent;
  bytes?: Uint8Array;
}

export type AgentModeInput = AgentMode;
