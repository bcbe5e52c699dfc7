/**
 * An unbounded single-consumer async queue: `push` never waits, the consumer reads in push
 * order, `end` finishes it (with an error, the reader's next read rejects with it).
 * `return()` from a `for await` that stops early ends it and calls `onReturn`.
 */
export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  #items: T[] = [];
  #head = 0;
  #waiting: { resolve: (r: IteratorResult<T>) => void; reject: (err: unknown) => void } | undefined;
  #ended = false;
  #error: unknown;
  readonly #onReturn: (() => void) | undefined;

  constructor(onReturn?: () => void) {
    this.#onReturn = onReturn;
  }

  get ended(): boolean {
    return this.#ended;
  }

  push(item: T): void {
    if (this.#ended) return;
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = undefined;
      waiting.resolve({ value: item, done: false });
    } else this.#items.push(item);
  }

  /** No more items: the reader gets what is queued, then the end (or `error`). */
  end(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (!waiting) return;
    if (error === undefined) waiting.resolve({ value: undefined, done: true });
    else waiting.reject(error);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head++] as T;
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.#ended) return this.#error === undefined ? Promise.resolve({ value: undefined, done: true }) : Promise.reject(this.#error);
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.#items = [];
    this.#head = 0;
    this.#ended = true;
    this.#error = undefined;
    this.#onReturn?.();
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(error?: unknown): Promise<IteratorResult<T>> {
    this.end(error);
    return this.return();
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
