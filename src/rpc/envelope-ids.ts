import { createHash, randomUUID } from "node:crypto";

/** A name-based UUID (RFC 9562 version 5) of `name` within the UUID `namespace`. */
function uuidV5(namespace: string, name: string): string {
  const hash = createHash("sha1").update(Buffer.from(namespace.replaceAll("-", ""), "hex")).update(name).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The ids of the envelopes of one session event. They are derived from the session id, the
 * event's seq and the turn index, so every stream of a session (and a replay) gives an event
 * the same `event_id` and a turn the same `correlation_id`. Events without a session (the
 * answers before `start`) get random ones.
 */
export function envelopeIds(item: { seq: number; sessionId?: string; turnIndex?: number }, eventType: string): { eventId: string; correlationId: string } {
  const { sessionId, turnIndex } = item;
  if (sessionId === undefined) {
    const eventId = randomUUID();
    return { eventId, correlationId: eventId };
  }
  const eventId = uuidV5(sessionId, `event/${item.seq}/${eventType}`);
  // Outside a turn every event is its own correlation.
  return { eventId, correlationId: turnIndex === undefined ? eventId : uuidV5(sessionId, `turn/${turnIndex}`) };
}
