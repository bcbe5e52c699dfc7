/**
 * A single-consumer async queue: producers `push` without waiting, the consumer iterates.
 * Items are delivered in push order; iteration ends after `close()` once the queue is
 * drained. When the consumer stops early (`break`), `onReturn` runs and later pushes are
 * dropped. A hand-written iterator, not an async generator: an item pushed while the
 * consumer waits is handed straight to it, with one promise and no queue.
 */
export class EventChannel<T> implements AsyncIterable<T> {
  #queue: T[] = [];
  #head = 0;
  #closed = false;
  #stopped = false;
  #waiting: ((result: IteratorResult<T, undefined>) => void) | undefined;
  #onReturn: () => void;

  constructor(onReturn: () => void) {
    this.#onReturn = onReturn;
  }

  push(item: T): void {
    if (this.#closed || this.#stopped) return;
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      this.#waiting = undefined;
      waiting({ done: false, value: item });
      return;
    }
    this.#queue.push(item);
  }

  close(): void {
    this.#closed = true;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ done: true, value: undefined });
  }

  #next(): Promise<IteratorResult<T, undefined>> {
    if (this.#head < this.#queue.length) {
      const value = this.#queue[this.#head++] as T;
      if (this.#head === this.#queue.length) {
        this.#queue = [];
        this.#head = 0;
      }
      return Promise.resolve({ done: false, value });
    }
    if (this.#closed || this.#stopped) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => {
      this.#waiting = resolve;
    });
  }

  #return(): Promise<IteratorResult<T, undefined>> {
    if (!this.#stopped && !(this.#closed && this.#head === this.#queue.length)) {
      this.#stopped = true;
      this.#queue = [];
      this.#head = 0;
      this.#onReturn();
    }
    return Promise.resolve({ done: true, value: undefined });
  }

  [Symbol.asyncIterator](): AsyncIterator<T, undefined> {
    return { next: () => this.#next(), return: () => this.#return() };
  }
}
