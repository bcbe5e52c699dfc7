/**
 * A FIFO that many producers push into and one consumer drains with `for await`.
 * `end()` lets the consumer finish after the queued items; `fail()` makes it throw
 * after them. Pushing after the end is a no-op, so late producers never throw.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #head = 0;
  #wake: (() => void) | undefined;
  #ended = false;
  #error: { err: unknown } | undefined;

  push(item: T): void {
    if (this.#ended) return;
    this.#items.push(item);
    this.#notify();
  }

  end(): void {
    this.#ended = true;
    this.#notify();
  }

  fail(err: unknown): void {
    if (this.#ended) return;
    this.#error = { err };
    this.end();
  }

  get ended(): boolean {
    return this.#ended;
  }

  get size(): number {
    return this.#items.length - this.#head;
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** The next item, or the end (or the failure) once the queue is drained. */
  #take(): IteratorResult<T> | undefined {
    if (this.#head < this.#items.length) {
      const item = this.#items[this.#head++] as T;
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      return { value: item, done: false };
    }
    if (this.#ended) {
      if (this.#error) throw this.#error.err;
      return { value: undefined, done: true };
    }
    return undefined;
  }

  // A hand-written iterator rather than an async generator: a queued item is handed over in
  // one settled promise, without the generator's own await per item (every response of a
  // session stream passes here).
  [Symbol.asyncIterator](): AsyncIterator<T> {
    let finished = false;
    const settle = (): IteratorResult<T> | undefined => {
      const taken = finished ? { value: undefined, done: true as const } : this.#take();
      if (taken?.done === true) finished = true;
      return taken;
    };
    const next = (): Promise<IteratorResult<T>> =>
      new Promise<IteratorResult<T>>((resolve, reject) => {
        const attempt = (): void => {
          try {
            const taken = settle();
            if (taken === undefined) this.#wake = attempt;
            else resolve(taken);
          } catch (err) {
            finished = true;
            reject(err);
          }
        };
        attempt();
      });
    return {
      next,
      return: (): Promise<IteratorResult<T>> => {
        finished = true;
        return Promise.resolve({ value: undefined, done: true });
      },
      throw: (err?: unknown): Promise<IteratorResult<T>> => {
        finished = true;
        return Promise.reject(err);
      },
    };
  }
}
