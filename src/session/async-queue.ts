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

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      if (this.#head < this.#items.length) {
        const item = this.#items[this.#head++] as T;
        if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
          this.#items = this.#items.slice(this.#head);
          this.#head = 0;
        }
        yield item;
        continue;
      }
      if (this.#ended) {
        if (this.#error) throw this.#error.err;
        return;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}
