import { createHash, randomUUID } from "node:crypto";

/** A name-based UUID (RFC 9562 version 5) of `name` within the UUID `namespace`. */
function uuidV5(namespace: string, name: string): string {
  const hash = createHash("sha1")
    .update(Buffer.from(namespace.replaceAll("-", ""), "hex"))
    .update(name)
    .digest();
  return formatUuid(hash, 0x50);
}

/** Sets the version nibble and the RFC variant bits of the first 16 bytes, as text. */
function formatUuid(bytes: Buffer, version: number): string {
  bytes[6] = (bytes[6]! & 0x0f) | version;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The ids of one stream's envelopes. They are derived from the session id, the event's seq,
 * the payload kind and the turn index, so every stream of a session (and a replay) gives an
 * event the same `event_id` and a turn the same `correlation_id`. Events without a session
 * (the answers before `start`) get random ones.
 *
 * An `event_id` is a UUID version 8: a per-session 128-bit base (SHA-1 of the session id,
 * computed once) with the seq (48 bits) and the payload's field number mixed into bytes no
 * version or variant bit uses. Within a session that is injective in (seq, payload); it costs
 * no hash per event (a hash per event was most of the envelope's encoding cost).
 */
export class EnvelopeIds {
  #sessionId: string | undefined;
  #base: Buffer | undefined;
  #turn: { index: number; id: string } | undefined;

  of(item: { seq: number; sessionId?: string; turnIndex?: number }, payloadField: number): { eventId: string; correlationId: string } {
    const { sessionId, turnIndex } = item;
    if (sessionId === undefined) {
      const eventId = randomUUID();
      return { eventId, correlationId: eventId };
    }
    const eventId = this.#eventId(sessionId, item.seq, payloadField);
    // Outside a turn every event is its own correlation.
    return { eventId, correlationId: turnIndex === undefined ? eventId : this.#turnId(sessionId, turnIndex) };
  }

  #eventId(sessionId: string, seq: number, payloadField: number): string {
    if (this.#sessionId !== sessionId || this.#base === undefined) {
      this.#sessionId = sessionId;
      this.#base = createHash("sha1").update(sessionId).digest().subarray(0, 16);
      this.#turn = undefined;
    }
    const bytes = Buffer.from(this.#base);
    bytes[7] = bytes[7]! ^ (payloadField & 0xff);
    // The low 48 bits of seq into bytes 10–15.
    let rest = seq;
    for (let i = 15; i >= 10; i--) {
      bytes[i] = bytes[i]! ^ (rest & 0xff);
      rest = Math.floor(rest / 256);
    }
    return formatUuid(bytes, 0x80);
  }

  #turnId(sessionId: string, index: number): string {
    if (this.#turn?.index !== index) this.#turn = { index, id: uuidV5(sessionId, `turn/${index}`) };
    return this.#turn.id;
  }
}
