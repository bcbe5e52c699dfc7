/**
 * Enveloped request bodies (gRPC, gRPC-Web, Connect streaming): split at envelope boundaries
 * as the chunks arrive, each envelope's message screened on its own.
 */
import { COMPRESSED_FLAG, ENVELOPE_HEADER_BYTES, envelopeHeader, envelopeLength } from "../framing.ts";
import { binaryCut, tooShortForOverCap } from "./binary-cut.ts";
import { SESSION_REQUEST_SCREENED } from "./carriers.ts";
import { appendAll, ChunkedBytes, type Cuts } from "./chunked-bytes.ts";

/**
 * One envelope (flags, length, message), as the chunks it arrived in: passed on as they are,
 * unless its message has a tools list over the cap, which is then cut (views of the chunks
 * and new field headers: nothing of the large message is copied). A message too short to
 * hold an over-cap list is not read at all.
 */
function screenEnvelope(chunks: Uint8Array[], messageLength: number, maxTools: number, cuts: Cuts): Uint8Array[] {
  const flags = firstByte(chunks);
  // Flags 0: a plain message (a short one holds no list over the cap); 1: compressed, may hold
  // anything. An end-of-stream envelope is not a message.
  const cutMessage =
    flags === 0 ? (tooShortForOverCap(messageLength, maxTools) ? undefined : cuts.plain) : flags === COMPRESSED_FLAG ? cuts.compressed : undefined;
  const cut = cutMessage?.(new ChunkedBytes(chunks), ENVELOPE_HEADER_BYTES, ENVELOPE_HEADER_BYTES + messageLength);
  if (cut === undefined) return chunks;
  const parts: Uint8Array[] = [
    envelopeHeader(
      flags as number,
      cut.reduce((n, p) => n + p.byteLength, 0),
    ),
  ];
  appendAll(parts, cut);
  return parts;
}

function firstByte(chunks: readonly Uint8Array[]): number | undefined {
  for (const chunk of chunks) if (chunk.byteLength > 0) return chunk[0];
  return undefined;
}

/**
 * The chunks of an enveloped request body with each envelope's message screened: each
 * envelope is passed on once it is complete, in the chunks it came in (split at envelope
 * boundaries); bytes after the last complete envelope are passed on at the end (connect then
 * reports the truncated message). From an envelope declaring more than `maxMessageBytes` on,
 * everything passes on at once: connect refuses it from its header, as it would unscreened.
 *
 * A hand-written iterator, not an async generator: every request of a session stream passes
 * here, and a chunk holding whole envelopes goes on in the promise that brought it.
 */
export function screenedEnvelopes(
  body: AsyncIterable<Uint8Array>,
  maxTools: number,
  maxMessageBytes: number,
  cuts: Cuts = { plain: binaryCut(SESSION_REQUEST_SCREENED.shape, maxTools) },
): AsyncIterableIterator<Uint8Array> {
  const source = body[Symbol.asyncIterator]();
  /** Screened chunks not yet handed on. */
  let ready: Uint8Array[] = [];
  let readyHead = 0;
  /** Chunks of the envelope being read. */
  const pending: Uint8Array[] = [];
  let size = 0;
  /** The message length of the envelope being read; -1 until its header is complete. */
  let length = -1;
  let passThrough = false;
  let ended = false;
  /** Returned or thrown into by the reader: nothing more is handed on, also from a read under way. */
  let closed = false;

  const feed = (chunk: Uint8Array): void => {
    if (passThrough) {
      ready.push(chunk);
      return;
    }
    pending.push(chunk);
    size += chunk.byteLength;
    for (;;) {
      if (length < 0) {
        if (size < ENVELOPE_HEADER_BYTES) return;
        const header = new ChunkedBytes(pending);
        length = envelopeLength((i) => header.at(i));
        if (length > maxMessageBytes) {
          passThrough = true;
          appendAll(ready, pending.splice(0));
          return;
        }
      }
      const total = ENVELOPE_HEADER_BYTES + length;
      if (size < total) return;
      // Indexed, then one splice: shifting chunk by chunk is quadratic in their number.
      const envelope: Uint8Array[] = [];
      let used = 0;
      for (let need = total; need > 0; ) {
        const next = pending[used] as Uint8Array;
        if (next.byteLength <= need) {
          envelope.push(next);
          need -= next.byteLength;
          used++;
        } else {
          envelope.push(next.subarray(0, need));
          pending[used] = next.subarray(need);
          need = 0;
        }
      }
      pending.splice(0, used);
      size -= total;
      appendAll(ready, screenEnvelope(envelope, length, maxTools, cuts));
      length = -1;
    }
  };
  /** The next ready chunk, or the end; undefined while more must be read. */
  const take = (): IteratorResult<Uint8Array> | undefined => {
    if (closed) return { value: undefined, done: true };
    if (readyHead < ready.length) {
      const value = ready[readyHead++] as Uint8Array;
      if (readyHead === ready.length) {
        ready = [];
        readyHead = 0;
      }
      return { value, done: false };
    }
    return ended ? { value: undefined, done: true } : undefined;
  };
  const onRead = (read: IteratorResult<Uint8Array>): IteratorResult<Uint8Array> | Promise<IteratorResult<Uint8Array>> => {
    if (closed) return { value: undefined, done: true };
    if (read.done === true) {
      ended = true;
      appendAll(ready, pending.splice(0));
    } else feed(read.value);
    return take() ?? source.next().then(onRead);
  };
  /** The reader is done: nothing more is handed on, and the body is let go. */
  const close = async (): Promise<void> => {
    closed = true;
    ready = [];
    readyHead = 0;
    await source.return?.();
  };
  const iterator: AsyncIterableIterator<Uint8Array> = {
    next: () => {
      const taken = take();
      return taken !== undefined ? Promise.resolve(taken) : source.next().then(onRead);
    },
    return: async () => {
      await close();
      return { value: undefined, done: true };
    },
    // Connect passes a failure of its pipeline up: the source is let go, and the failure rethrown.
    throw: async (error?: unknown) => {
      await close();
      throw error;
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}
