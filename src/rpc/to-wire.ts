import { create, type JsonObject as PbJsonObject } from "@bufbuild/protobuf";
import type { PermissionRule } from "../agent/index.ts";
import type { TokenUsage } from "../models/index.ts";
import type { InputState, SequencedEvent, SessionEvent } from "../session/index.ts";
import {
  ApprovalRequestSchema,
  InputState as PbInputState,
  type PermissionRule as PbPermissionRule,
  PermissionRuleSchema,
  type SessionResponse,
  SessionResponseSchema,
  TokenUsageSchema,
} from "../gen/roz/v1/agent_pb.js";

export const u32 = (n: number): number => Math.max(0, Math.min(0xffffffff, Math.round(n)));

/** The fields of `McpServerDegraded` (flat) and `McpServerDegradedPayload` (envelope): the same three. */
export const mcpDegradation = (e: { serverName: string; failureCount: number; lastError: string }) => ({
  serverName: e.serverName,
  failureCount: u32(e.failureCount),
  lastError: e.lastError,
});

export const usageToWire = (u: TokenUsage) =>
  create(TokenUsageSchema, {
    inputTokens: u32(u.inputTokens),
    outputTokens: u32(u.outputTokens),
    cacheReadTokens: u32(u.cacheReadTokens),
    cacheCreationTokens: u32(u.cacheCreationTokens),
  });

export const ruleToWire = (r: PermissionRule): PbPermissionRule =>
  create(PermissionRuleSchema, {
    toolPattern: r.toolPattern,
    policy: r.policy,
    ...(r.category !== undefined ? { category: r.category } : {}),
    ...(r.reason !== undefined ? { reason: r.reason } : {}),
  });

type ResponseCase = SessionResponse["response"];

const INPUT_STATES: Record<InputState, PbInputState> = {
  queued: PbInputState.QUEUED,
  steered: PbInputState.STEERED,
  started: PbInputState.STARTED,
  dropped: PbInputState.DROPPED,
};

function inputUpdate(update: Omit<Extract<SessionEvent, { type: "input_update" }>, "type">): ResponseCase {
  return {
    case: "inputUpdate",
    value: {
      $typeName: "roz.v1.InputUpdate",
      messageId: update.messageId,
      state: INPUT_STATES[update.state],
      queuePosition: u32(update.queuePosition ?? 0),
      content: update.content ?? "",
      turnMessageId: update.turnMessageId ?? "",
    },
  };
}

function responseOf(event: SessionEvent): ResponseCase {
  switch (event.type) {
    case "session_started":
      return {
        case: "sessionStarted",
        value: { $typeName: "roz.v1.SessionStarted", sessionId: event.sessionId, model: event.model, permissions: event.permissions.map(ruleToWire) },
      };
    case "text_delta":
      return { case: "textDelta", value: { $typeName: "roz.v1.TextDelta", messageId: event.messageId, content: event.text } };
    case "thinking_delta":
      return { case: "thinkingDelta", value: { $typeName: "roz.v1.ThinkingDelta", messageId: event.messageId, content: event.text } };
    case "tool_request":
    case "worker_tool_request":
      return {
        case: "toolRequest",
        value: {
          $typeName: "roz.v1.ToolRequest",
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          parameters: event.parameters as PbJsonObject,
          timeoutMs: u32(event.timeoutMs),
          workerId: event.type === "worker_tool_request" ? event.workerId : "",
        },
      };
    case "team_started":
      return { case: "teamStarted", value: { $typeName: "roz.v1.TeamStarted", taskId: event.taskId } };
    case "mcp_server_degraded":
      return { case: "mcpServerDegraded", value: { $typeName: "roz.v1.McpServerDegraded", ...mcpDegradation(event) } };
    case "input_update":
      return inputUpdate(event);
    case "steered":
      return inputUpdate({ ...event, state: "steered" });
    case "rolled_back":
      return { case: "rolledBack", value: { $typeName: "roz.v1.RolledBack", turns: u32(event.turns), remainingTurns: u32(event.remainingTurns) } };
    case "tool_finished":
      return {
        case: "toolFinished",
        value: {
          $typeName: "roz.v1.ToolFinished",
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          success: event.success,
          result: event.result,
          truncated: event.truncated,
          workerId: event.workerId ?? "",
        },
      };
    case "activity":
      return {
        case: "activityUpdate",
        value: {
          $typeName: "roz.v1.ActivityUpdate",
          state: event.state,
          detail: event.detail,
          ...(event.progress !== undefined ? { progress: event.progress } : {}),
          ...(event.approval !== undefined
            ? {
                approval: create(ApprovalRequestSchema, {
                  toolCallId: event.approval.toolCallId,
                  toolName: event.approval.toolName,
                  parameters: event.approval.parameters as PbJsonObject,
                  reason: event.approval.reason,
                  timeoutMs: u32(event.approval.timeoutMs),
                }),
              }
            : {}),
        },
      };
    case "tool_denied":
      return {
        case: "toolDenied",
        value: { $typeName: "roz.v1.ToolDenied", toolCallId: event.toolCallId, toolName: event.toolName, reason: event.reason, detail: event.detail },
      };
    // Envelope-only events have no flat variant: flat streams write nothing for them (they
    // share the seq of the event before them, so the numbering stays gap-free).
    case "approval_resolved":
    case "model_call_completed":
    case "session_completed":
      return { case: undefined };
    case "context_compacted":
      return {
        case: "contextCompacted",
        value: {
          $typeName: "roz.v1.ContextCompacted",
          level: event.level,
          messagesBefore: u32(event.messagesBefore),
          messagesAfter: u32(event.messagesAfter),
          tokensBefore: u32(event.tokensBefore),
          tokensAfter: u32(event.tokensAfter),
          ...(event.summary !== undefined ? { summary: event.summary } : {}),
        },
      };
    case "error":
    case "session_error":
      return {
        case: "error",
        value: {
          $typeName: "roz.v1.SessionError",
          code: event.code,
          message: event.message,
          retryable: event.retryable,
          requestId: event.type === "session_error" ? (event.requestId ?? "") : "",
        },
      };
    case "turn_complete":
      return {
        case: "turnComplete",
        value: {
          $typeName: "roz.v1.TurnComplete",
          messageId: event.messageId,
          usage: usageToWire(event.usage),
          stopReason: event.stopReason,
          costUsd: event.record.costUsd,
        },
      };
    case "keepalive":
      return {
        case: "keepalive",
        value: {
          $typeName: "roz.v1.Keepalive",
          ...(event.tokensUsed !== undefined ? { tokensUsed: u32(event.tokensUsed) } : {}),
          ...(event.tokensMax !== undefined ? { tokensMax: u32(event.tokensMax) } : {}),
        },
      };
    case "pong":
      return { case: "pong", value: { $typeName: "roz.v1.Pong" } };
    default: {
      const unreachable: never = event;
      throw new Error(`unmapped session event ${JSON.stringify(unreachable)}`);
    }
  }
}

/**
 * Maps one numbered session event to its flat (v0.2) `SessionResponse`: what flat streams
 * get and what the event log stores.
 */
export function responseToWire({ seq, event }: SequencedEvent): SessionResponse {
  return create(SessionResponseSchema, { seq: BigInt(seq), response: responseOf(event) });
}
