import type { LoggedEvent } from "./types.ts";

/**
 * The kept responses of one live session, in seq order, as encoded bytes. Entries not yet
 * written to the store (`unflushed`) are always kept; flushed ones beyond `capacity` are
 * dropped oldest first (the store still has them). `completeFrom` is the seq from which every
 * kept response is here: older ones must be read from the store.
 */
export class EventLog {
  readonly #capacity: number;
  #entries: LoggedEvent[] = [];
  /** Index of the first entry not yet stored. */
  #flushed = 0;
  #completeFrom: number;

  constructor(capacity: number, completeFrom = 1) {
    this.#capacity = Math.max(1, capacity);
    this.#completeFrom = completeFrom;
  }

  get completeFrom(): number {
    return this.#completeFrom;
  }

  append(entry: LoggedEvent): void {
    this.#entries.push(entry);
  }

  /** Entries with seq > `afterSeq`, ascending. */
  after(afterSeq: number): LoggedEvent[] {
    let lo = 0;
    let hi = this.#entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#entries[mid]!.seq <= afterSeq) lo = mid + 1;
      else hi = mid;
    }
    return this.#entries.slice(lo);
  }

  /** The entries the store does not have yet, oldest first. */
  unflushed(): LoggedEvent[] {
    return this.#entries.slice(this.#flushed);
  }

  /** The first `count` unflushed entries are stored now; trims what exceeds the capacity. */
  flushed(count: number): void {
    this.#flushed += count;
    const excess = Math.min(this.#flushed, this.#entries.length - this.#capacity);
    if (excess <= 0) return;
    this.#entries = this.#entries.slice(excess);
    this.#flushed -= excess;
    this.#completeFrom = this.#entries[0]?.seq ?? this.#completeFrom;
  }
}
