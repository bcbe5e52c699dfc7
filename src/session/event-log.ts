import type { LoggedEvent, SessionEvent } from "./types.ts";

/** Turns the logged bytes of a delta back into its event (the log keeps no delta objects). */
export type DeltaDecoder = (bytes: Uint8Array) => SessionEvent | undefined;

/** The first segment's size (an idle session's log holds one small response); each next one doubles, up to `MAX_SEGMENT`. */
const FIRST_SEGMENT = 256;
const MAX_SEGMENT = 64 * 1024;
/** A response at least this large is kept as the bytes it came in (a segment of its own), not copied. */
const OWN_SEGMENT = MAX_SEGMENT / 4;

/** An entry's numbers in `EventLog.#meta`: seq, time, turn index (0 outside turns), segment number, offset and length in it; FIELDS of them. */
const [SEQ, AT, TURN, SEGMENT, OFFSET, LENGTH, FIELDS] = [0, 1, 2, 3, 4, 5, 6];

const isDelta = (event: SessionEvent | undefined): boolean => event?.type === "text_delta" || event?.type === "thinking_delta";

/**
 * The kept responses of one live session, in seq order. Entries not yet written to the store
 * (`unflushed`) are always kept; flushed ones beyond `capacity` are dropped oldest first (the
 * store still has them). `completeFrom` is the seq from which every kept response is here:
 * older ones must be read from the store.
 *
 * A long turn is mostly deltas, so the log holds no object per entry: each response's bytes
 * are copied into byte segments that grow with the session (one growing buffer rather than an
 * object and an array buffer per response), a large response is kept as it came, and each
 * entry's seq, time, turn and place are numbers in one flat array. Other events keep their
 * event object (envelope streams map it); a delta's event is decoded from its bytes when a
 * replay asks for it.
 */
export class EventLog {
  readonly #capacity: number;
  readonly #sessionId: string | undefined;
  readonly #decodeDelta: DeltaDecoder | undefined;
  #completeFrom: number;
  // One entry per kept response, from index `#head` on: its numbers in `#meta` (FIELDS per
  // entry, one array rather than one per field: an idle session holds one entry), its event
  // (except for deltas) in `#event`.
  #meta: number[] = [];
  #event: (SessionEvent | undefined)[] = [];
  #head = 0;
  /** Index of the first entry not yet stored. */
  #flushed = 0;
  /** Byte segments, from number `#firstSegment` on; the last one is being filled (`#used` bytes). */
  #segments: Uint8Array[] = [];
  #firstSegment = 0;
  #used = 0;

  constructor(capacity: number, completeFrom = 1, options: { sessionId?: string; decodeDelta?: DeltaDecoder } = {}) {
    this.#capacity = Math.max(1, capacity);
    this.#completeFrom = completeFrom;
    this.#sessionId = options.sessionId;
    this.#decodeDelta = options.decodeDelta;
  }

  get completeFrom(): number {
    return this.#completeFrom;
  }

  /** Entries held, the dropped ones before `#head` included. */
  get #count(): number {
    return this.#event.length;
  }

  #field(i: number, field: number): number {
    return this.#meta[i * FIELDS + field]!;
  }

  append(entry: LoggedEvent): void {
    const { bytes } = entry;
    let at = 0;
    if (bytes.length >= OWN_SEGMENT) {
      // Encoded once and never changed: kept as it is; the next response starts a new segment.
      this.#segments.push(bytes);
      this.#used = Number.POSITIVE_INFINITY; // it takes nothing more
    } else {
      at = this.#reserve(bytes.length);
      this.#segments[this.#segments.length - 1]!.set(bytes, at);
    }
    // In FIELDS order.
    this.#meta.push(entry.seq, entry.at ?? 0, entry.turnIndex ?? 0, this.#firstSegment + this.#segments.length - 1, at, bytes.length);
    // A delta without a decoder keeps its event: nothing could rebuild it.
    this.#event.push(isDelta(entry.event) && this.#decodeDelta !== undefined ? undefined : entry.event);
  }

  /** Entries with seq > `afterSeq`, ascending, with their events (for envelope streams). */
  after(afterSeq: number): LoggedEvent[] {
    let lo = this.#head;
    let hi = this.#count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#field(mid, SEQ) <= afterSeq) lo = mid + 1;
      else hi = mid;
    }
    const out: LoggedEvent[] = [];
    for (let i = lo; i < this.#count; i++) {
      const entry = this.#entry(i, this.#bytes(i));
      const event = this.#event[i] ?? this.#decodeDelta?.(entry.bytes);
      out.push(event === undefined ? entry : { ...entry, event });
    }
    return out;
  }

  /** The entries the store does not have yet, oldest first, without events (their bytes are views of the log's segments). */
  unflushed(): LoggedEvent[] {
    const out: LoggedEvent[] = [];
    for (let i = this.#flushed + this.#head; i < this.#count; i++) out.push(this.#entry(i, this.#bytes(i)));
    return out;
  }

  /** The first `count` unflushed entries are stored now; trims what exceeds the capacity. */
  flushed(count: number): void {
    this.#flushed += count;
    const kept = this.#count - this.#head;
    const excess = Math.min(this.#flushed, kept - this.#capacity);
    if (excess <= 0) return;
    this.#head += excess;
    this.#flushed -= excess;
    if (this.#head < this.#count) this.#completeFrom = this.#field(this.#head, SEQ);
    this.#dropBehindHead();
  }

  #entry(i: number, bytes: Uint8Array): LoggedEvent {
    const turn = this.#field(i, TURN);
    return {
      seq: this.#field(i, SEQ),
      at: this.#field(i, AT),
      ...(this.#sessionId !== undefined ? { sessionId: this.#sessionId } : {}),
      ...(turn > 0 ? { turnIndex: turn } : {}),
      bytes,
    };
  }

  #bytes(i: number): Uint8Array {
    const offset = this.#field(i, OFFSET);
    return this.#segments[this.#field(i, SEGMENT) - this.#firstSegment]!.subarray(offset, offset + this.#field(i, LENGTH));
  }

  /** Room for `size` more bytes in the last segment: grown (copied) while under MAX_SEGMENT, else a new one. Returns where they go. */
  #reserve(size: number): number {
    const last = this.#segments.at(-1);
    if (last !== undefined && this.#used + size <= last.length) {
      this.#used += size;
      return this.#used - size;
    }
    if (last !== undefined && last.length < MAX_SEGMENT && this.#used + size <= MAX_SEGMENT) {
      let grown = last.length * 2;
      while (grown < this.#used + size) grown *= 2;
      const next = new Uint8Array(grown);
      next.set(last.subarray(0, this.#used));
      this.#segments[this.#segments.length - 1] = next;
      this.#used += size;
      return this.#used - size;
    }
    const first = last === undefined ? FIRST_SEGMENT : MAX_SEGMENT;
    this.#segments.push(new Uint8Array(Math.max(first, size)));
    this.#used = size;
    return 0;
  }

  /** Frees the segments no kept entry uses, and compacts the arrays once half of them is dropped. */
  #dropBehindHead(): void {
    const firstUsed = this.#head < this.#count ? this.#field(this.#head, SEGMENT) : this.#firstSegment + this.#segments.length - 1;
    if (firstUsed > this.#firstSegment) {
      this.#segments.splice(0, firstUsed - this.#firstSegment);
      this.#firstSegment = firstUsed;
    }
    if (this.#head < this.#count / 2) return;
    this.#meta.splice(0, this.#head * FIELDS);
    this.#event.splice(0, this.#head);
    this.#head = 0;
  }
}
