import type { JsonObject, JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import type { RozError } from "./errors.ts";
import type { StartSessionSchema, UserMessageSchema } from "./gen/roz/v1/agent_pb.js";

/** Which protocol carries a session: gRPC bidi `StreamSession`, or the `AttachSession` + `SendToSession` pair over Connect or gRPC-Web. */
export type TransportKind = "grpc" | "connect" | "grpc-web";

export interface RozClientOptions {
  /** The server, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** A `roz_sk_…` key, sent as `authorization: Bearer …` (a function is asked on every call). */
  apiKey?: string | (() => string | undefined) | undefined;
  /** Default: `grpc` in Node, `connect` in browsers (which cannot do gRPC). */
  transport?: TransportKind | undefined;
  /** How long a session keeps trying to re-attach after its connection broke. Default 120 000 ms. */
  reconnectTimeoutMs?: number | undefined;
  /** Extra request headers for every call. */
  headers?: Record<string, string> | (() => Record<string, string>) | undefined;
  /** Connect protocol only: JSON instead of binary protobuf. */
  jsonFormat?: boolean | undefined;
  /** Node only: the HTTP version of `connect` and `grpc-web` (`grpc` is always HTTP/2). Default `1.1`. */
  httpVersion?: "1.1" | "2" | undefined;
  /** How many session events `session.events` keeps for a reader that starts late. Default 10 000. */
  keepEvents?: number | undefined;
}

/** What a tool's `run` gets besides its arguments. */
export interface ToolCall {
  toolCallId: string;
  toolName: string;
  /** Set when a team worker of the session made the call. */
  workerId: string;
}

/** A client tool: offered to the model with its schema, run here when the agent calls it. */
export interface ToolDefinition {
  description: string;
  /** A JSON Schema of an object. Default: no parameters. */
  parameters?: JsonObject | undefined;
  /**
   * Runs the call; a string is the result as it is, anything else is sent as JSON; a throw
   * becomes a failed result with the error's message. Runs once per call, whatever the breaks.
   */
  // biome-ignore lint/suspicious/noExplicitAny: the arguments are what the model sent, shaped by `parameters`
  run: (args: any, call: ToolCall) => unknown;
  /** How long the server waits for the result. Default: the server's (120 000 ms). */
  timeoutMs?: number | undefined;
  /** `pure` tools have no side effects: the server may run several at once and allows them by default. */
  category?: "pure" | "physical" | undefined;
}

export type Tools = Record<string, ToolDefinition>;

/** A call the server wants approved (session-behaviour.md §4). */
export interface Approval {
  toolCallId: string;
  toolName: string;
  parameters: JsonObject;
  /** The matching rule's reason. */
  reason: string;
  /** How long the server waits before it denies the call. */
  timeoutMs: number;
}

/** `true` approves; `{ approved, modifier }` may also change argument values (same keys and JSON types). */
export type ApprovalDecision = boolean | { approved: boolean; modifier?: JsonObject | undefined };
export type OnApproval = (approval: Approval) => ApprovalDecision | Promise<ApprovalDecision>;

type StartInit = Omit<MessageInitShape<typeof StartSessionSchema>, "$typeName" | "tools">;

/** `startSession`: every `StartSession` field (camelCase), with tools that run here and the approval handler. */
export interface StartSessionOptions extends StartInit {
  tools?: Tools | undefined;
  onApproval?: OnApproval | undefined;
}

export interface AttachSessionOptions {
  /** Replay every event after this seq, then live (default 0: everything the server keeps). */
  afterSeq?: number | undefined;
  /** The tools this client answers (its own offered them, or another client did). */
  tools?: Tools | undefined;
  onApproval?: OnApproval | undefined;
}

/** How a message sent while a turn runs is delivered. */
export type Delivery = "queue" | "steer" | "interrupt";

export interface SendOptions extends Omit<MessageInitShape<typeof UserMessageSchema>, "$typeName" | "content" | "delivery" | "messageId" | "tools"> {
  /** Default `queue`: while a turn runs, the message waits for its own turn. */
  delivery?: Delivery | undefined;
  /** Default: a new UUID. */
  messageId?: string | undefined;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
}

/** How a turn ended. */
export interface TurnResult {
  /** The turn's message id (for a steer, the turn it joined). */
  messageId: string;
  /** The answer's text (every `text_delta` of the turn this client saw). */
  text: string;
  thinking: string;
  /** `end_turn`, `max_tokens`, `max_cycles`, `cancelled`, `tool_error_limit`, `budget_exceeded` or `error`. */
  stopReason: string;
  usage: Usage;
  costUsd: number;
  /** With `stopReason: "error"` (and `budget_exceeded`): the in-band error that ended it. */
  error?: RozError | undefined;
}

/** Where a session's connection is. */
export type SessionStatus = "connecting" | "live" | "reconnecting" | "ended" | "detached" | "failed";

export type { JsonObject, JsonValue };
