import type { BusMessage } from "./types.ts";

/**
 * The reader side every subscription shares: messages buffered in order for one reader, the
 * oldest dropped (and counted) beyond `maxPending`, so a slow reader never holds up the bus.
 * Iterating ends once the queue is closed; leaving the loop closes it.
 */
export class MessageQueue implements AsyncIterable<BusMessage> {
  readonly #maxPending: number;
  readonly #onClose: () => void;
  #items: BusMessage[] = [];
  #wake: (() => void) | undefined;
  #closed = false;
  dropped = 0;
  received = 0;

  /** `onClose` runs once, when the queue closes (by `close()` or by the reader leaving). */
  constructor(maxPending: number, onClose: () => void) {
    this.#maxPending = maxPending;
    this.#onClose = onClose;
  }

  get closed(): boolean {
    return this.#closed;
  }

  push(message: BusMessage): void {
    if (this.#closed) return;
    this.received++;
    this.#items.push(message);
    if (this.#items.length > this.#maxPending) {
      this.#items.shift();
      this.dropped++;
    }
    this.#wakeReader();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#onClose();
    this.#wakeReader();
  }

  #wakeReader(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<BusMessage> {
    try {
      for (;;) {
        if (this.#closed) return;
        const next = this.#items.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    } finally {
      this.close();
    }
  }
}
