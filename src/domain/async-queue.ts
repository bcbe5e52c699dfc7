export interface AsyncQueueOptions {
  /** At most this many unread items: beyond, the oldest is dropped (and counted in `dropped`), so a slow reader never holds up its producers. Unbounded when absent. */
  maxPending?: number;
  /** Runs once, when the queue closes: by `close()`, or by a reader leaving early when `closeOnReturn`. */
  onClose?: () => void;
  /** A reader that leaves before the end closes the queue. Otherwise the queue stays open and a later reader gets what is left. */
  closeOnReturn?: boolean;
}

type Waiter<T> = {
  resolve: (result: IteratorResult<T>) => void;
  reject: (err: unknown) => void;
};

const DONE: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true });

/**
 * A FIFO that many producers push into without waiting and one reader drains with
 * `for await`, in push order. `end()` lets the reader finish after the queued items;
 * `fail()` makes it throw after them; `close()` stops it at once, dropping what is unread.
 * Pushing after any of these is a no-op, so late producers never throw.
 *
 * A hand-written iterator rather than an async generator: an item pushed while the reader
 * waits is handed straight to it in one settled promise, with no generator step per item
 * (every response of a session stream and every event of a turn passes here).
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  readonly #maxPending: number;
  readonly #onClose: (() => void) | undefined;
  readonly #closeOnReturn: boolean;
  #items: (T | undefined)[] = [];
  #head = 0;
  #waiter: Waiter<T> | undefined;
  #ended = false;
  #closed = false;
  #error: { err: unknown } | undefined;
  #dropped = 0;
  #received = 0;

  constructor(options: AsyncQueueOptions = {}) {
    this.#maxPending = options.maxPending ?? Number.POSITIVE_INFINITY;
    this.#onClose = options.onClose;
    this.#closeOnReturn = options.closeOnReturn ?? false;
  }

  /** No more items will be taken: `end`, `fail` or `close` was called. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Closed by `close()` (or by a reader leaving, with `closeOnReturn`). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Items queued and not yet read. */
  get size(): number {
    return this.#items.length - this.#head;
  }

  /** Items dropped unread because `maxPending` were waiting. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Items taken (pushed before the end), dropped ones included. */
  get received(): number {
    return this.#received;
  }

  push(item: T): void {
    if (this.#ended) return;
    this.#received++;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter.resolve({ value: item, done: false });
      return;
    }
    this.#items.push(item);
    if (this.size > this.#maxPending) {
      this.#shift();
      this.#dropped++;
    }
  }

  /** The reader finishes after the queued items. */
  end(): void {
    this.#ended = true;
    this.#settleWaiter();
  }

  /** The reader throws `err` after the queued items. */
  fail(err: unknown): void {
    if (this.#ended) return;
    this.#error = { err };
    this.end();
  }

  /** Stops now: unread items are dropped, the reader's loop ends, `onClose` runs. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#ended = true;
    this.#error = undefined;
    this.#items = [];
    this.#head = 0;
    this.#onClose?.();
    this.#settleWaiter();
  }

  #shift(): T {
    const item = this.#items[this.#head] as T;
    this.#items[this.#head++] = undefined;
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    } else if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    }
    return item;
  }

  /** A waiting reader learns of the end (only ever waits on an empty queue). */
  #settleWaiter(): void {
    const waiter = this.#waiter;
    if (waiter === undefined) return;
    this.#waiter = undefined;
    if (this.#error) waiter.reject(this.#error.err);
    else waiter.resolve(DONE);
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    let finished = false;
    let waiter: Waiter<T> | undefined;
    const next = (): Promise<IteratorResult<T>> => {
      if (finished) return Promise.resolve(DONE);
      if (this.size > 0) return Promise.resolve({ value: this.#shift(), done: false });
      if (this.#ended) {
        finished = true;
        return this.#error ? Promise.reject(this.#error.err) : Promise.resolve(DONE);
      }
      return new Promise<IteratorResult<T>>((resolve, reject) => {
        waiter = {
          resolve: (result) => {
            if (result.done === true) finished = true;
            resolve(result);
          },
          reject: (err) => {
            finished = true;
            reject(err);
          },
        };
        this.#waiter = waiter;
      });
    };
    /** The reader leaves: a waiting `next` ends. */
    const leave = (): void => {
      finished = true;
      if (waiter !== undefined && this.#waiter === waiter) {
        this.#waiter = undefined;
        waiter.resolve(DONE);
      }
      if (this.#closeOnReturn && !(this.#ended && this.size === 0)) this.close();
    };
    // `throw` too: a `yield*` over this queue forwards a throw into it (and fails without one).
    return {
      next,
      return: (): Promise<IteratorResult<T>> => {
        leave();
        return Promise.resolve(DONE);
      },
      throw: (err?: unknown): Promise<IteratorResult<T>> => {
        leave();
        return Promise.reject(err);
      },
    };
  }
}
