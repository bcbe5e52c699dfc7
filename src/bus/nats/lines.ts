import type { NatsConnection, Subscription as NatsCoreSubscription } from "@nats-io/transport-node";
import { MessageQueue } from "../message-queue.ts";
import type { Listener } from "../types.ts";
import { DEFAULT_MAX_PENDING } from "./options.ts";
import { checkSubject, fromHeaders, toHeaders } from "./wire.ts";

/** Direct lines on core NATS (`<prefix>.dl.…`): never stored, at most once, in the sender's order. */
export class DirectLines {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #listeners = new Set<MessageQueue>();

  constructor(nc: NatsConnection, prefix: string) {
    this.#nc = nc;
    this.#prefix = `${prefix}.dl.`;
  }

  send(subject: string, data: Uint8Array, headers?: Record<string, string>): void {
    checkSubject(subject);
    const h = toHeaders(headers);
    try {
      this.#nc.publish(this.#prefix + subject, data, h ? { headers: h } : {});
    } catch {
      // A closed connection: at most once means this message is lost, which the reader notices.
    }
  }

  listen(subject: string, options: { maxPending?: number } = {}): Listener {
    checkSubject(subject);
    let sub: NatsCoreSubscription | undefined;
    const queue = new MessageQueue(options.maxPending ?? DEFAULT_MAX_PENDING, () => {
      this.#listeners.delete(queue);
      sub?.unsubscribe();
    });
    sub = this.#nc.subscribe(this.#prefix + subject, {
      callback: (err, msg) => {
        if (!err) queue.push({ subject, seq: 0, data: msg.data, headers: fromHeaders(msg.headers) });
      },
    });
    this.#listeners.add(queue);
    return {
      // As for a responder: the server has the subscription once a flush after it comes back.
      ready: this.#nc.flush().catch(() => undefined),
      get dropped() {
        return queue.dropped;
      },
      get received() {
        return queue.received;
      },
      close: () => queue.close(),
      [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    };
  }

  /** Ends every listener. */
  close(): void {
    for (const l of [...this.#listeners]) l.close();
  }
}
