import type { ConsumerMessages, JsMsg } from "@nats-io/jetstream";
import { MessageQueue } from "../message-queue.ts";
import type { BusMessage, Subscription } from "../types.ts";
import { fromHeaders } from "./wire.ts";

/** A subscription fed by one ordered JetStream consumer, which it deletes when closed. */
export class NatsSubscription implements Subscription {
  readonly #queue: MessageQueue;
  #messages: ConsumerMessages | undefined;
  readonly #eventSubject: (natsSubject: string) => string;
  readonly ready: Promise<void>;
  #started!: () => void;

  constructor(maxPending: number, eventSubject: (natsSubject: string) => string, onClose: (s: NatsSubscription) => void) {
    this.#eventSubject = eventSubject;
    this.ready = new Promise((resolve) => {
      this.#started = resolve;
    });
    this.#queue = new MessageQueue(maxPending, () => {
      onClose(this);
      // Closing an ordered consumer's messages also deletes the server-side consumer.
      void this.#messages?.close().catch(() => {});
    });
  }

  get closed(): boolean {
    return this.#queue.closed;
  }

  get dropped(): number {
    return this.#queue.dropped;
  }

  get received(): number {
    return this.#queue.received;
  }

  /** Takes over the consumer's messages (closing them at once when already closed). */
  attach(messages: ConsumerMessages): void {
    this.#messages = messages;
    if (this.#queue.closed) void messages.close().catch(() => {});
  }

  offer(m: JsMsg): void {
    this.#queue.push({ subject: this.#eventSubject(m.subject), seq: m.seq, data: m.data, headers: fromHeaders(m.headers) });
  }

  /** The start is fixed (or the subscription failed and closed: nothing more will come). */
  started(): void {
    this.#started();
  }

  close(): void {
    this.#queue.close();
    this.#started();
  }

  [Symbol.asyncIterator](): AsyncIterator<BusMessage> {
    return this.#queue[Symbol.asyncIterator]();
  }
}
