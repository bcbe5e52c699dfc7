import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { OutgoingEvent, SequencedEvent } from "../session/index.ts";
import { type SessionResponse, SessionResponseSchema } from "../gen/roz/v1/agent_pb.js";
import { responseToWire } from "./to-wire.ts";

/** Encodes a kept response once; the session keeps these bytes for the log, the store and binary wires. */
export function encodeResponse(event: SequencedEvent): Uint8Array {
  return toBinary(SessionResponseSchema, responseToWire(event));
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
function preEncoded(bytes: Uint8Array): SessionResponse {
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
 * The one write path of a session stream: the message to yield for one outgoing response.
 * Binary calls get the logged bytes as they are; JSON calls need a real message (from the
 * event when the stream has it, else decoded from the log).
 */
export function responseMessage(item: OutgoingEvent, json: boolean): SessionResponse {
  if (!json && item.bytes) return preEncoded(item.bytes);
  if (item.event) return responseToWire({ seq: item.seq, event: item.event });
  return fromBinary(SessionResponseSchema, item.bytes!);
}
