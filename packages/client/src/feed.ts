import { AsyncQueue } from "./queue.ts";

/**
 * Items for any number of readers: each iterator gets the items kept so far (at most
 * `keep`, the newest), then every later one, in order, until `end`. A reader that stops
 * early (`break`) is forgotten.
 */
export class Feed<T> implements AsyncIterable<T> {
  readonly #keep: number;
  #kept: T[] = [];
  readonly #readers = new Set<AsyncQueue<T>>();
  #ended = false;
  #error: unknown;

  constructor(keep = Number.POSITIVE_INFINITY) {
    this.#keep = keep;
  }

  get ended(): boolean {
    return this.#ended;
  }

  push(item: T): void {
    if (this.#ended) return;
    if (this.#keep > 0) {
      this.#kept.push(item);
      if (this.#kept.length > this.#keep * 2) this.#kept = this.#kept.slice(-this.#keep);
    }
    for (const reader of this.#readers) reader.push(item);
  }

  /** Ends every reader after its queued items (with `error`, their next read rejects with it). */
  end(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    for (const reader of this.#readers) reader.end(error);
    this.#readers.clear();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    const reader: AsyncQueue<T> = new AsyncQueue<T>(() => this.#readers.delete(reader));
    const start = Math.max(0, this.#kept.length - this.#keep);
    for (let i = start; i < this.#kept.length; i++) reader.push(this.#kept[i] as T);
    if (this.#ended) reader.end(this.#error);
    else this.#readers.add(reader);
    return reader;
  }
}
