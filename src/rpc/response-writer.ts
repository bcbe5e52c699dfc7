import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { OutgoingEvent, SequencedEvent, SessionEvent } from "../session/index.ts";
import { type SessionResponse, SessionResponseSchema } from "../gen/roz/v1/agent_pb.js";
import type { EventFormat } from "./event-format.ts";
import { createResponseEncoder } from "./responses.ts";
import { responseToWire } from "./to-wire.ts";

/** The bytes of an event that has no flat response: flat streams skip it (see `createResponseEncoder`). */
const NO_FLAT_RESPONSE = new Uint8Array(0);

/**
 * Encodes a kept response once, as its flat (v0.2) response; the session keeps these bytes for
 * the log, the store and binary flat wires. `session_completed` has no flat response: empty.
 */
export function encodeResponse(event: SequencedEvent): Uint8Array {
  if (event.event.type === "session_completed") return NO_FLAT_RESPONSE;
  return toBinary(SessionResponseSchema, responseToWire(event));
}

/** The delta event whose flat response `bytes` holds (the session's log keeps deltas as bytes only); undefined for any other response. */
export function decodeDeltaResponse(bytes: Uint8Array): SessionEvent | undefined {
  const { response } = fromBinary(SessionResponseSchema, bytes);
  if (response.case === "textDelta") return { type: "text_delta", messageId: response.value.messageId, text: response.value.content };
  if (response.case === "thinkingDelta") return { type: "thinking_delta", messageId: response.value.messageId, text: response.value.content };
  return undefined;
}

/** Reads the varint at the start of `bytes`: its value and length. */
function readVarint(bytes: Uint8Array): { value: number; length: number } {
  let value = 0;
  let shift = 0;
  for (let i = 0; i < bytes.length && i < 5; i++) {
    const b = bytes[i]!;
    value |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) return { value: value >>> 0, length: i + 1 };
    shift += 7;
  }
  throw new Error("malformed protobuf tag");
}

/**
 * A `SessionResponse` whose binary encoding IS `bytes`, without decoding them: an empty message
 * whose one unknown field is the first tag of `bytes` followed by everything after it, which
 * protobuf-es writes back byte for byte (tag, then the raw rest). So Connect's serializer
 * copies the logged bytes instead of encoding the message again.
 */
export function preEncoded(bytes: Uint8Array): SessionResponse {
  const message = create(SessionResponseSchema);
  if (bytes.length === 0) return message;
  const tag = readVarint(bytes);
  message.$unknown = [{ no: tag.value >>> 3, wireType: tag.value & 7, data: bytes.subarray(tag.length) }];
  return message;
}

/** True when the call's messages travel as protobuf JSON (Connect / gRPC-Web with `+json`). */
export function isJsonCall(ctx: HandlerContext): boolean {
  return /json/i.test(ctx.requestHeader.get("content-type") ?? "");
}

/**
 * The flat response of one outgoing item. Binary calls get the logged bytes as they are; JSON
 * calls need a real message (from the event when the stream has it, else decoded from the log).
 */
function flatMessage(item: OutgoingEvent, json: boolean): SessionResponse {
  if (!json && item.bytes) return preEncoded(item.bytes);
  if (item.event) return responseToWire({ ...item, event: item.event });
  return fromBinary(SessionResponseSchema, item.bytes!);
}

/** What one stream writes for one outgoing item: zero or more responses. */
export interface StreamWriter {
  (item: OutgoingEvent): SessionResponse[];
  /** The same responses in their binary encoding, the kept bytes as they are. */
  binary(item: OutgoingEvent): Uint8Array[];
}

/**
 * The one write path of a session stream in `format` (session-behaviour.md §9):
 * - `flat`: the shared pre-encoded bytes of kept events (encoded once by the session),
 *   nothing for `session_completed`; stream-local events are encoded here.
 * - `envelope` / `both`: the domain event mapped per stream (`createResponseEncoder`). An
 *   event replayed from the store has only its flat bytes (the store keeps no domain
 *   events), so it is written flat, as a `both` stream would get it; see docs/event-envelope.md.
 */
export function createStreamWriter(format: EventFormat, json: boolean): StreamWriter {
  const encode = createResponseEncoder(format);
  const write = (item: OutgoingEvent): SessionResponse[] => {
    const { event } = item;
    if (format !== "flat" && event) return encode({ ...item, event });
    if (item.bytes?.length === 0) return [];
    if (event !== undefined && item.bytes === undefined) return encode({ ...item, event });
    return [flatMessage(item, json)];
  };
  const binary = (item: OutgoingEvent): Uint8Array[] => {
    if (item.bytes !== undefined && (format === "flat" || item.event === undefined)) return item.bytes.length === 0 ? [] : [item.bytes];
    return write(item).map((response) => toBinary(SessionResponseSchema, response));
  };
  return Object.assign(write, { binary });
}
