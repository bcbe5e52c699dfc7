// What both entry points export besides RozClient.
export { RozError } from "./errors.ts";
/** `input_update.state` values (`InputState.QUEUED`, `STEERED`, `STARTED`, `DROPPED`). */
export { InputState } from "./gen/roz/v1/agent_pb.js";
export type { EventOf, SessionEvent, SessionEventType, TeamEvent } from "./events.ts";
export type {
  Approval,
  ApprovalDecision,
  AttachSessionOptions,
  Delivery,
  JsonObject,
  JsonValue,
  OnApproval,
  RozClientOptions,
  SendOptions,
  SessionStatus,
  StartSessionOptions,
  ToolCall,
  ToolDefinition,
  Tools,
  TransportKind,
  TurnResult,
  Usage,
} from "./options.ts";
export type { Session } from "./session.ts";
export type { Turn } from "./turn.ts";
