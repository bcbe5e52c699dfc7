import type { LoggedEvent, SessionEvent } from "./types.ts";

/** Turns the logged bytes of a delta back into its event (the log keeps no delta objects). */
export type DeltaDecoder = (bytes: Uint8Array) => SessionEvent | undefined;

/** The first segment's size; each next one doubles, up to `MAX_SEGMENT`. */
const FIRST_SEGMENT = 1024;
const MAX_SEGMENT = 64 * 1024;
/** A response at least this large is kept as the bytes it came in (a segment of its own), not copied. */
const OWN_SEGMENT = MAX_SEGMENT / 4;

const isDelta = (event: SessionEvent | undefined): boolean => event?.type === "text_delta" || event?.type === "thinking_delta";

/**
 * The kept responses of one live session, in seq order. Entries not yet written to the store
 * (`unflushed`) are always kept; flushed ones beyond `capacity` are dropped oldest first (the
 * store still has them). `completeFrom` is the seq from which every kept response is here:
 * older ones must be read from the store.
 *
 * A long turn is mostly deltas, so the log holds no object per entry: each response's bytes
 * are copied into byte segments that grow with the session (one growing buffer rather than an
 * object and an array buffer per response), and its seq, time and turn are numbers in flat
 * arrays. Other events keep their event object (envelope streams map it); a delta's event is
 * decoded from its bytes when a replay asks for it.
 */
export class EventLog {
  readonly #capacity: number;
  readonly #sessionId: string | undefined;
  readonly #decodeDelta: DeltaDecoder | undefined;
  #completeFrom: number;
  // One entry per kept response, from index `#head` on.
  #seq: number[] = [];
  #at: number[] = [];
  /** The turn index, 0 outside turns. */
  #turn: number[] = [];
  #segment: number[] = [];
  #offset: number[] = [];
  #length: number[] = [];
  /** The event, except for deltas. */
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
    this.#seq.push(entry.seq);
    this.#at.push(entry.at ?? 0);
    this.#turn.push(entry.turnIndex ?? 0);
    this.#segment.push(this.#firstSegment + this.#segments.length - 1);
    this.#offset.push(at);
    this.#length.push(bytes.length);
    // A delta without a decoder keeps its event: nothing could rebuild it.
    this.#event.push(isDelta(entry.event) && this.#decodeDelta !== undefined ? undefined : entry.event);
  }

  /** Entries with seq > `afterSeq`, ascending, with their events (for envelope streams). */
  after(afterSeq: number): LoggedEvent[] {
    let lo = this.#head;
    let hi = this.#seq.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#seq[mid]! <= afterSeq) lo = mid + 1;
      else hi = mid;
    }
    const out: LoggedEvent[] = [];
    for (let i = lo; i < this.#seq.length; i++) {
      const entry = this.#entry(i, this.#bytes(i));
      const event = this.#event[i] ?? this.#decodeDelta?.(entry.bytes);
      out.push(event === undefined ? entry : { ...entry, event });
    }
    return out;
  }

  /** The entries the store does not have yet, oldest first, without events (their bytes are views of the log's segments). */
  unflushed(): LoggedEvent[] {
    const out: LoggedEvent[] = [];
    for (let i = this.#flushed + this.#head; i < this.#seq.length; i++) out.push(this.#entry(i, this.#bytes(i)));
    return out;
  }

  /** The first `count` unflushed entries are stored now; trims what exceeds the capacity. */
  flushed(count: number): void {
    this.#flushed += count;
    const kept = this.#seq.length - this.#head;
    const excess = Math.min(this.#flushed, kept - this.#capacity);
    if (excess <= 0) return;
    this.#head += excess;
    this.#flushed -= excess;
    this.#completeFrom = this.#seq[this.#head] ?? this.#completeFrom;
    this.#dropBehindHead();
  }

  #entry(i: number, bytes: Uint8Array): LoggedEvent {
    const turn = this.#turn[i]!;
    return {
      seq: this.#seq[i]!,
      at: this.#at[i]!,
      ...(this.#sessionId !== undefined ? { sessionId: this.#sessionId } : {}),
      ...(turn > 0 ? { turnIndex: turn } : {}),
      bytes,
    };
  }

  #bytes(i: number): Uint8Array {
    const offset = this.#offset[i]!;
    return this.#segments[this.#segment[i]! - this.#firstSegment]!.subarray(offset, offset + this.#length[i]!);
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
    const firstUsed = this.#segment[this.#head] ?? this.#firstSegment + this.#segments.length - 1;
    if (firstUsed > this.#firstSegment) {
      this.#segments.splice(0, firstUsed - this.#firstSegment);
      this.#firstSegment = firstUsed;
    }
    if (this.#head < this.#seq.length / 2) return;
    for (const column of [this.#seq, this.#at, this.#turn, this.#segment, this.#offset, this.#length, this.#event] as unknown[][]) column.splice(0, this.#head);
    this.#head = 0;
  }
}
