import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { type BidiCall, type WireRequest, wrapDuplex } from "./grpc-js-client.ts";

/**
 * An envelope as @grpc/proto-loader decodes it (keepCase, `longs: String`, `defaults`,
 * `oneofs`): `typed_event` names the payload field, which holds the payload, e.g.
 * `{ event_type: "text_delta", typed_event: "text_delta", text_delta: { content: "Hi" }, … }`.
 */
export interface UpstreamEnvelope {
  event_id: string;
  correlation_id: string;
  timestamp: { seconds: string; nanos: number } | null;
  event_type: string;
  typed_event: string;
  [payload: string]: unknown;
}

/** A response of the upstream proto: only `keepalive`, `pong` or `session_event` (and no `seq`). */
export interface UpstreamResponse {
  response: "keepalive" | "pong" | "session_event";
  session_event?: UpstreamEnvelope;
  [field: string]: unknown;
}

export type UpstreamCall = BidiCall<WireRequest, UpstreamResponse>;

export interface UpstreamClient {
  /** Opens StreamSession; `format` is sent as `roz-event-format` unless undefined. */
  openSession(format?: string | undefined): UpstreamCall;
  close(): void;
}

type Client = grpc.Client & { StreamSession(metadata: grpc.Metadata): grpc.ClientDuplexStream<WireRequest, UpstreamResponse> };

const protoDir = fileURLToPath(new URL("./upstream/", import.meta.url));

/**
 * A grpc-js client built from upstream's proto (`test/support/upstream/agent.proto`), as a
 * newer upstream client is: it can decode nothing but the envelope, keepalives and pongs.
 */
export function createUpstreamClient(baseUrl: string): UpstreamClient {
  const definition = protoLoader.loadSync("agent.proto", {
    includeDirs: [protoDir],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as { roz: { v1: { AgentService: grpc.ServiceClientConstructor } } };
  const client = new loaded.roz.v1.AgentService(new URL(baseUrl).host, grpc.credentials.createInsecure()) as unknown as Client;
  return {
    openSession(format = "envelope") {
      const metadata = new grpc.Metadata();
      if (format !== undefined) metadata.set("roz-event-format", format);
      return wrapDuplex(client.StreamSession(metadata));
    },
    close: () => client.close(),
  };
}

/** Upstream request builders (proto field names). */
export const up = {
  start: (start: Record<string, unknown> = {}): WireRequest => ({ start: { environment_id: "", ...start } }),
  user: (content: string, extra: Record<string, unknown> = {}): WireRequest => ({ user_message: { content, ...extra } }),
  toolResult: (callId: string, result: string): WireRequest => ({ tool_result: { tool_call_id: callId, success: true, result } }),
  decision: (approvalId: string, approved: boolean, modifier?: Record<string, unknown>): WireRequest => ({
    permission_decision: { approval_id: approvalId, approved, ...(modifier !== undefined ? { modifier: toStruct(modifier) } : {}) },
  }),
  cancelTurn: (reason = "test"): WireRequest => ({ cancel_turn: { reason } }),
  cancelSession: (reason = "test"): WireRequest => ({ cancel_session: { reason } }),
  ping: (): WireRequest => ({ ping: {} }),
};

/**
 * protobufjs takes a `google.protobuf.Struct` in its message form; the well-known types come
 * from protobufjs's own descriptors, whose field names are camelCase even with keepCase.
 */
function toValue(value: unknown): Record<string, unknown> {
  if (value === null) return { nullValue: "NULL_VALUE" };
  if (Array.isArray(value)) return { listValue: { values: value.map(toValue) } };
  switch (typeof value) {
    case "number":
      return { numberValue: value };
    case "string":
      return { stringValue: value };
    case "boolean":
      return { boolValue: value };
    default:
      return { structValue: toStruct(value as Record<string, unknown>) };
  }
}

export function toStruct(object: Record<string, unknown>): Record<string, unknown> {
  return { fields: Object.fromEntries(Object.entries(object).map(([k, v]) => [k, toValue(v)])) };
}

/** The JSON value of a decoded `google.protobuf.Struct`. */
export function fromStruct(struct: unknown): Record<string, unknown> {
  const fields = (struct as { fields?: Record<string, Record<string, unknown>> } | null)?.fields ?? {};
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, fromValue(v)]));
}

function fromValue(v: Record<string, unknown>): unknown {
  const kind = v["kind"] as string | undefined;
  switch (kind) {
    case "nullValue":
      return null;
    case "numberValue":
    case "stringValue":
    case "boolValue":
      return v[kind];
    case "listValue":
      return ((v["listValue"] as { values?: Record<string, unknown>[] }).values ?? []).map(fromValue);
    case "structValue":
      return fromStruct(v["structValue"]);
    default:
      throw new Error(`not a google.protobuf.Value: ${JSON.stringify(v)}`);
  }
}
