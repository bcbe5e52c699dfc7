import { create, type JsonObject as PbJsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ActivityState } from "../agent/index.ts";
import type { SequencedEvent, SessionEvent } from "../session/index.ts";
import { type SessionEventEnvelope, SessionEventEnvelopeSchema } from "../gen/roz/v1/agent_pb.js";
import { EnvelopeIds } from "./envelope-ids.ts";
import { mcpDegradation, u32 } from "./to-wire.ts";

type TypedEvent = Exclude<NonNullable<MessageInitShape<typeof SessionEventEnvelopeSchema>["typedEvent"]>, { case: undefined }>;
type PayloadCase = NonNullable<SessionEventEnvelope["typedEvent"]["case"]>;

/** `event_type` is the payload's field name, except for these two (upstream's names). */
const eventTypeExceptions: Partial<Record<PayloadCase, string>> = { presenceHinted: "presence_hint", modelCallCompleted: "model_call" };
/** Each payload's `event_type` and field number, from the schema. */
const payloadFields = new Map(
  SessionEventEnvelopeSchema.fields
    .filter((f) => f.oneof?.name === "typed_event")
    .map((f) => [f.localName as PayloadCase, { eventType: eventTypeExceptions[f.localName as PayloadCase] ?? f.name, number: f.number }]),
);

/** Our activity states as upstream names them. */
const activityStates: Record<ActivityState, string> = {
  thinking: "planning",
  calling_tool: "calling_tool",
  waiting_approval: "awaiting_approval",
  idle: "idle",
};

const compactionLevels = { tool_results: "tool_clear", thinking: "thinking_strip", summary: "llm_summary" } as const;

/**
 * The envelope payloads of one session event, in order; undefined for the events every
 * format sends flat (`keepalive`, `pong`).
 */
function payloadsOf(event: SessionEvent): TypedEvent[] | undefined {
  switch (event.type) {
    case "session_started":
      return [
        {
          case: "sessionStarted",
          value: { sessionId: event.sessionId, mode: "server", modelName: event.model, permissions: event.permissions.map((r) => ({ ...r })) },
        },
      ];
    case "text_delta":
      return [{ case: "textDelta", value: { content: event.text, messageId: event.messageId } }];
    case "thinking_delta":
      return [{ case: "thinkingDelta", value: { content: event.text, messageId: event.messageId } }];
    // A worker's call is a tool request like the agent's own (its id carries the worker's).
    case "tool_request":
    case "worker_tool_request":
      return [
        {
          case: "toolCallRequested",
          value: { callId: event.toolCallId, toolName: event.toolName, parameters: event.parameters as PbJsonObject, timeoutMs: u32(event.timeoutMs) },
        },
      ];
    case "activity": {
      const state = event.observing === true ? "observing" : activityStates[event.state];
      const changed: TypedEvent = { case: "activityChanged", value: { state, reason: event.detail } };
      const approval = event.approval;
      if (approval === undefined) return [changed];
      return [
        changed,
        {
          case: "approvalRequested",
          value: {
            approvalId: approval.toolCallId,
            action: approval.toolName,
            reason: approval.reason,
            timeoutSecs: BigInt(Math.ceil(approval.timeoutMs / 1000)),
          },
        },
      ];
    }
    case "approval_resolved": {
      const outcome: PbJsonObject = event.approved ? { type: "approved" } : { type: "denied", reason: event.reason ?? "approval_denied" };
      return [{ case: "approvalResolved", value: { approvalId: event.toolCallId, outcome } }];
    }
    case "tool_denied":
      return [{ case: "toolUnavailable", value: { toolName: event.toolName, reason: event.reason } }];
    case "context_compacted":
      return [
        {
          case: "contextCompacted",
          value: {
            level: compactionLevels[event.level],
            messagesAffected: u32(event.messagesAffected),
            tokensBefore: u32(event.tokensBefore),
            tokensAfter: u32(event.tokensAfter),
          },
        },
      ];
    case "model_call_completed":
      return [
        {
          case: "modelCallCompleted",
          value: {
            modelId: event.modelId,
            provider: event.provider,
            inputTokens: u32(event.usage.inputTokens),
            outputTokens: u32(event.usage.outputTokens),
            latencyMs: BigInt(event.latencyMs),
            cacheHitTokens: u32(event.usage.cacheReadTokens),
            stopReason: event.stopReason,
          },
        },
      ];
    case "error":
    case "session_error":
      return [{ case: "sessionRejected", value: { code: event.code, message: event.message, retryable: event.retryable } }];
    case "turn_complete":
      return [
        {
          case: "turnFinished",
          value: {
            inputTokens: u32(event.usage.inputTokens),
            outputTokens: u32(event.usage.outputTokens),
            cacheCreationTokens: u32(event.usage.cacheCreationTokens),
            cacheReadTokens: u32(event.usage.cacheReadTokens),
            stopReason: event.stopReason,
            messageId: event.messageId,
          },
        },
      ];
    case "session_completed":
      return [
        {
          case: "sessionCompleted",
          value: {
            summary: `${event.status} after ${event.turns} turn${event.turns === 1 ? "" : "s"}: ${event.reason}`,
            inputTokens: BigInt(event.usage.inputTokens),
            outputTokens: BigInt(event.usage.outputTokens),
          },
        },
      ];
    case "tool_finished":
      return [{ case: "toolCallFinished", value: { callId: event.toolCallId, toolName: event.toolName, resultSummary: event.result } }];
    case "mcp_server_degraded":
      return [{ case: "mcpServerDegraded", value: mcpDegradation(event) }];
    // Upstream has no input or rollback events: envelope streams get nothing for them.
    case "input_update":
    case "steered":
      return [];
    case "keepalive":
    case "pong":
    // No envelope payload says this: it goes out flat in every format.
    case "team_started":
    // The sender gets its answer whatever its format.
    case "rolled_back":
      return undefined;
    default: {
      const unreachable: never = event;
      throw new Error(`unmapped session event ${JSON.stringify(unreachable)}`);
    }
  }
}

/** What a stream remembers between events: the turn whose `turn_started` it has sent, and its id source. */
export interface EnvelopeStreamState {
  turnIndex?: number;
  ids: EnvelopeIds;
}

export const envelopeStreamState = (): EnvelopeStreamState => ({ ids: new EnvelopeIds() });

/**
 * The envelopes of one numbered session event (session-behaviour.md §9); undefined when
 * the event is sent flat in every format. The first event of a turn on this stream is
 * preceded by that turn's `turn_started`, so a stream attached in the middle of a turn also
 * learns which turn it is in.
 */
export function envelopesOf(item: SequencedEvent, state: EnvelopeStreamState): SessionEventEnvelope[] | undefined {
  const payloads = payloadsOf(item.event);
  if (payloads === undefined) return undefined;
  if (item.turnIndex !== undefined && item.turnIndex !== state.turnIndex) {
    state.turnIndex = item.turnIndex;
    payloads.unshift({ case: "turnStarted", value: { turnIndex: item.turnIndex } });
  }
  const timestamp = timestampFromMs(item.at ?? Date.now());
  return payloads.map((typedEvent) => {
    const field = payloadFields.get(typedEvent.case)!;
    return create(SessionEventEnvelopeSchema, { ...state.ids.of(item, field.number), timestamp, eventType: field.eventType, typedEvent });
  });
}
