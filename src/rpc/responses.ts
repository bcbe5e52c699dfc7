import { create } from "@bufbuild/protobuf";
import type { SequencedEvent } from "../session/index.ts";
import { type SessionResponse, SessionResponseSchema } from "../gen/roz/v1/agent_pb.js";
import type { EventFormat } from "./event-format.ts";
import { type EnvelopeStreamState, envelopesOf } from "./to-envelope.ts";
import { responseToWire } from "./to-wire.ts";

/** Maps one numbered session event to what one stream receives. */
export type ResponseEncoder = (item: SequencedEvent) => SessionResponse[];

/**
 * The encoder of one stream in `format`. The format is applied here, at the wire edge:
 * `seq` numbers the session's events, so every response of one event carries that event's
 * seq, in every format and on every stream.
 * - `flat`: the v0.2 variant, one response per event (a bare `seq` for envelope-only events).
 * - `envelope`: one response per envelope (field 19); an event may have several, e.g. the
 *   turn's `turn_started` before its first event, or `approval_requested` after the
 *   `activity_changed` that announces it.
 * - `both`: the flat response (when the event has a flat variant), then the envelope ones.
 * `keepalive` and `pong` are the same flat response in every format.
 */
export function createResponseEncoder(format: EventFormat): ResponseEncoder {
  const state: EnvelopeStreamState = {};
  return (item) => {
    if (format === "flat") return [responseToWire(item)];
    const envelopes = envelopesOf(item, state);
    if (envelopes === undefined) return [responseToWire(item)];
    const seq = BigInt(item.seq);
    const wrapped = envelopes.map((value) => create(SessionResponseSchema, { seq, response: { case: "sessionEvent", value } }));
    if (format === "envelope") return wrapped;
    const flat = responseToWire(item);
    return flat.response.case === undefined ? wrapped : [flat, ...wrapped];
  };
}
