import { RozError } from "../../errors/index.ts";
import { MessageQueue } from "../message-queue.ts";
import { isValidSubject, subjectMatches } from "../subject.ts";
import type { BusMessage, EventBus, Listener, RequestHandler, Responder, SubscribeOptions, Subscription } from "../types.ts";

export interface MemoryBusOptions {
  /** Messages kept for subscriptions that start at a sequence (oldest dropped first). */
  retainMessages?: number;
}

const DEFAULT_RETAIN = 100_000;
const DEFAULT_MAX_PENDING = 10_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

/** The embedded bus of a single process: one in-memory stream, delivery in publish order. */
export function createMemoryBus(options: MemoryBusOptions = {}): EventBus {
  return new MemoryBus(options.retainMessages ?? DEFAULT_RETAIN);
}

class MemorySubscription implements Subscription {
  readonly #filter: string;
  readonly #queue: MessageQueue;
  readonly ready = Promise.resolve();

  constructor(filter: string, maxPending: number, onClose: (s: MemorySubscription) => void) {
    this.#filter = filter;
    this.#queue = new MessageQueue(maxPending, () => onClose(this));
  }

  get dropped(): number {
    return this.#queue.dropped;
  }

  get received(): number {
    return this.#queue.received;
  }

  offer(message: BusMessage): void {
    if (subjectMatches(this.#filter, message.subject)) this.#queue.push(message);
  }

  close(): void {
    this.#queue.close();
  }

  [Symbol.asyncIterator](): AsyncIterator<BusMessage> {
    return this.#queue[Symbol.asyncIterator]();
  }
}

class MemoryBus implements EventBus {
  readonly kind = "memory";
  readonly #retain: number;
  #log: BusMessage[] = [];
  #seq = 0;
  readonly #subscriptions = new Set<MemorySubscription>();
  readonly #handlers = new Map<string, RequestHandler>();
  readonly #listeners = new Map<string, Set<MemorySubscription>>();

  constructor(retain: number) {
    this.#retain = retain;
  }

  async publish(subject: string, data: Uint8Array, headers: Record<string, string> = {}): Promise<number> {
    if (!isValidSubject(subject)) throw new RozError("invalid_argument", `invalid subject "${subject}"`);
    const message: BusMessage = { subject, seq: ++this.#seq, data, headers: { ...headers } };
    this.#log.push(message);
    if (this.#log.length > this.#retain * 2) this.#log = this.#log.slice(-this.#retain);
    for (const s of this.#subscriptions) s.offer(message);
    return message.seq;
  }

  subscribe(filter: string, options: SubscribeOptions): Subscription {
    const subscription = new MemorySubscription(filter, options.maxPending ?? DEFAULT_MAX_PENDING, (s) => this.#subscriptions.delete(s));
    if (options.from !== "new") {
      const after = options.from.afterSeq;
      for (const m of this.#log.slice(-this.#retain)) if (m.seq > after) subscription.offer(m);
    }
    this.#subscriptions.add(subscription);
    return subscription;
  }

  async request(subject: string, data: Uint8Array, options: { timeoutMs?: number; headers?: Record<string, string> } = {}): Promise<Uint8Array> {
    const handler = this.#handlers.get(subject);
    if (handler === undefined) throw new RozError("unavailable", `no responder for "${subject}"`, { details: { noResponders: true } });
    const timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RozError("unavailable", `no reply on "${subject}" within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([handler(data, { ...(options.headers ?? {}) }), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  serve(subject: string, handler: RequestHandler): Responder {
    if (this.#handlers.has(subject)) throw new RozError("conflict", `"${subject}" is already served`);
    this.#handlers.set(subject, handler);
    return {
      close: () => {
        if (this.#handlers.get(subject) === handler) this.#handlers.delete(subject);
      },
    };
  }

  send(subject: string, data: Uint8Array, headers: Record<string, string> = {}): void {
    if (!isValidSubject(subject)) throw new RozError("invalid_argument", `invalid subject "${subject}"`);
    const message: BusMessage = { subject, seq: 0, data, headers: { ...headers } };
    for (const l of this.#listeners.get(subject) ?? []) l.offer(message);
  }

  listen(subject: string, options: { maxPending?: number } = {}): Listener {
    if (!isValidSubject(subject)) throw new RozError("invalid_argument", `invalid subject "${subject}"`);
    const listeners = this.#listeners.get(subject) ?? new Set();
    this.#listeners.set(subject, listeners);
    const listener = new MemorySubscription(subject, options.maxPending ?? DEFAULT_MAX_PENDING, (l) => {
      listeners.delete(l);
      if (listeners.size === 0 && this.#listeners.get(subject) === listeners) this.#listeners.delete(subject);
    });
    listeners.add(listener);
    return listener;
  }

  async close(): Promise<void> {
    for (const s of [...this.#subscriptions]) s.close();
    for (const set of [...this.#listeners.values()]) for (const l of [...set]) l.close();
    this.#handlers.clear();
  }
}
