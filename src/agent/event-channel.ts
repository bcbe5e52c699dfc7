/**
 * A single-consumer async queue: producers `push` without waiting, the consumer iterates.
 * Items are delivered in push order; iteration ends after `close()` once the queue is
 * drained. When the consumer stops early (`break`), `onReturn` runs and later pushes are
 * dropped.
 */
export class EventChannel<T> implements AsyncIterable<T> {
  #queue: T[] = [];
  #closed = false;
  #stopped = false;
  #wake: (() => void) | undefined;
  #onReturn: () => void;

  constructor(onReturn: () => void) {
    this.#onReturn = onReturn;
  }

  push(item: T): void {
    if (this.#closed || this.#stopped) return;
    this.#queue.push(item);
    this.#signal();
  }

  close(): void {
    this.#closed = true;
    this.#signal();
  }

  #signal(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    try {
      for (;;) {
        const item = this.#queue.shift();
        if (item !== undefined) {
          yield item;
          continue;
        }
        if (this.#closed) return;
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    } finally {
      if (!(this.#closed && this.#queue.length === 0)) {
        this.#stopped = true;
        this.#queue.length = 0;
        this.#onReturn();
      }
    }
  }
}
