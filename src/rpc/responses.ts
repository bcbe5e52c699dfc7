import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { type RozError, toRozError } from "../errors/index.ts";
import { type SequencedEvent, sessionErrorOf } from "../session/index.ts";
import { type SessionResponse, SessionResponseSchema } from "../gen/roz/v1/agent_pb.js";
import { type EventFormat, eventFormatOf } from "./event-format.ts";
import { envelopeStreamState, envelopesOf } from "./to-envelope.ts";
import { responseToWire } from "./to-wire.ts";

/** Maps one numbered session event to what one stream receives. */
export type ResponseEncoder = (item: SequencedEvent) => SessionResponse[];

/**
 * The encoder of one stream in `format`. The format is applied here, at the wire edge:
 * `seq` numbers the session's events, so every response of one event carries that event's
 * seq, in every format and on every stream.
 * - `flat`: the v0.2 variant, one response per event (a bare `seq` for envelope-only events,
 *   none for `session_completed`, the session's last event).
 * - `envelope`: one response per envelope (field 19); an event may have several, e.g. the
 *   turn's `turn_started` before its first event, or `approval_requested` after the
 *   `activity_changed` that announces it.
 * - `both`: the flat response (when the event has a flat variant), then the envelope ones.
 * `keepalive` and `pong` are the same flat response in every format.
 */
export function createResponseEncoder(format: EventFormat): ResponseEncoder {
  const state = envelopeStreamState();
  return (item) => {
    // Nothing follows a session's last event, so leaving it out of flat streams leaves no gap.
    if (format === "flat") {
      const flat = responseToWire(item);
      // session_completed (nothing follows it) and the envelope-only events (they share the
      // seq of the event before them) have no flat variant: nothing, rather than an empty message.
      return flat.response.case === undefined ? [] : [flat];
    }
    const envelopes = envelopesOf(item, state);
    if (envelopes === undefined) return [responseToWire(item)];
    const seq = BigInt(item.seq);
    const wrapped = envelopes.map((value) => create(SessionResponseSchema, { seq, response: { case: "sessionEvent", value } }));
    if (format === "envelope") return wrapped;
    const flat = responseToWire(item);
    return flat.response.case === undefined ? wrapped : [flat, ...wrapped];
  };
}

/**
 * The encoder of a streaming call's `roz-event-format` (§9), for any handler that streams
 * session events. A value that names no format is refused before anything else: the handler
 * yields `refused` (the in-band `SessionError{invalid_argument}`, seq 0, in the server's
 * default format) and then throws `error` (status INVALID_ARGUMENT).
 */
export function encoderOf(
  ctx: HandlerContext,
  fallback: EventFormat,
): { encode: ResponseEncoder; format: EventFormat } | { refused: SessionResponse[]; error: RozError } {
  try {
    const format = eventFormatOf(ctx.requestHeader, fallback);
    return { encode: createResponseEncoder(format), format };
  } catch (err) {
    const error = toRozError(err);
    return { refused: refusalResponses(createResponseEncoder(fallback), error), error };
  }
}

/** A call refused before any session event: its in-band `SessionError` at seq 0, as `encode` writes it. */
export function refusalResponses(encode: ResponseEncoder, error: RozError): SessionResponse[] {
  return encode({ seq: 0, event: { type: "session_error", ...sessionErrorOf(error) } });
}
