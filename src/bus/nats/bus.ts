import { connect } from "@nats-io/transport-node";
import { headers as natsHeaders, RequestError, type MsgHdrs, type NatsConnection, type Subscription as NatsCoreSubscription } from "@nats-io/transport-node";
import {
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamClient,
  type JsMsg,
  type StreamConfig,
} from "@nats-io/jetstream";
import { RozError, reasons, type Reason } from "../../errors/index.ts";
import { MessageQueue } from "../message-queue.ts";
import { isValidSubject } from "../subject.ts";
import type { BusHealth, BusMessage, EventBus, Listener, RequestHandler, Responder, SubscribeFrom, SubscribeOptions, Subscription } from "../types.ts";

export interface NatsBusOptions {
  /** `NATS_URL`: one URL or a comma-separated list (`nats://host:4222,…`). */
  servers: string;
  /**
   * Names this deployment's share of the NATS account: the stream is `<prefix>_events`
   * holding `<prefix>.ev.>`; requests travel on `<prefix>.rq.…` and direct lines on
   * `<prefix>.dl.…` (core NATS, never stored).
   */
  prefix?: string;
  /** Stream limits: the oldest messages are discarded past either. */
  maxAgeMs?: number;
  maxBytes?: number;
  /** Stream replicas (a clustered NATS needs 3 for fault tolerance; a single server 1). */
  replicas?: number;
  /** How long to wait between reconnect attempts. */
  reconnectWaitMs?: number;
  /** Shown in the server's connection list. */
  connectionName?: string;
  /** Told about connection changes (for logs). */
  onStatus?: (event: { type: string; server?: string; error?: string }) => void;
}

const DEFAULT_PREFIX = "roz";
const DEFAULT_MAX_AGE_MS = 24 * 3600_000;
const DEFAULT_MAX_BYTES = 1024 ** 3;
const DEFAULT_MAX_PENDING = 10_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
/** JetStream API calls of our own (stream info at subscribe). */
const API_TIMEOUT_MS = 10_000;
/** Pull expiry of a consumer: a lost consumer (server restart) is noticed after two missed heartbeats of half this. */
const CONSUME_EXPIRES_MS = 5_000;
/** Messages a consumer asks for at once (refilled at half): large enough that refills never stall delivery. */
const PULL_BATCH = 1_000;
/** Headers a failing request handler's reply carries instead of a body. */
const ERROR_REASON = "Roz-Error-Reason";
const ERROR_MESSAGE = "Roz-Error-Message";

interface StreamLimits {
  maxAgeMs: number;
  maxBytes: number;
  replicas: number;
}

/** The NATS bus: an `EventBus` plus what the connection is doing. */
export interface NatsBus extends EventBus {
  health(): BusHealth;
}

/**
 * Connects to NATS, creates (or updates) the stream with its limits, and returns the bus.
 * Rejects with `unavailable` when no server answers.
 */
export async function createNatsBus(options: NatsBusOptions): Promise<NatsBus> {
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  if (!/^[A-Za-z0-9_-]+$/.test(prefix)) throw new RozError("config_invalid", `NATS prefix "${prefix}" must be letters, digits, _ or -`);
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: options.servers
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== ""),
      name: options.connectionName ?? "roz",
      maxReconnectAttempts: -1,
      // Publishes and requests made while reconnecting wait in the client until it is back.
      reconnectTimeWait: options.reconnectWaitMs ?? 500,
    });
  } catch (err) {
    throw new RozError("unavailable", `cannot connect to NATS at ${options.servers}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const limits = { maxAgeMs: options.maxAgeMs ?? DEFAULT_MAX_AGE_MS, maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES, replicas: options.replicas ?? 1 };
  const bus = new NatsEventBus(nc, prefix, limits, options.onStatus);
  try {
    await bus.ensureStream();
  } catch (err) {
    await bus.close();
    throw new RozError("unavailable", `cannot set up the JetStream stream on ${options.servers}: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  return bus;
}

const toHeaders = (record: Record<string, string> | undefined): MsgHdrs | undefined => {
  if (record === undefined || Object.keys(record).length === 0) return undefined;
  const h = natsHeaders();
  for (const [k, v] of Object.entries(record)) h.set(k, v);
  return h;
};

const fromHeaders = (h: MsgHdrs | undefined): Record<string, string> => {
  const out: Record<string, string> = {};
  if (h === undefined) return out;
  for (const k of h.keys()) out[k] = h.get(k);
  return out;
};

const isReason = (value: string): value is Reason => Object.hasOwn(reasons, value);

class NatsSubscription implements Subscription {
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

class NatsEventBus implements NatsBus {
  readonly kind = "nats";
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #stream: string;
  readonly #eventPrefix: string;
  readonly #requestPrefix: string;
  readonly #directPrefix: string;
  readonly #subscriptions = new Set<NatsSubscription>();
  readonly #responders = new Map<string, NatsCoreSubscription>();
  readonly #listeners = new Set<MessageQueue>();
  #connected = true;
  #reconnects = 0;
  #lastError: string | undefined;
  #closing = false;
  readonly #limits: StreamLimits;

  constructor(nc: NatsConnection, prefix: string, limits: StreamLimits, onStatus: NatsBusOptions["onStatus"]) {
    this.#nc = nc;
    this.#limits = limits;
    this.#js = jetstream(nc);
    this.#stream = `${prefix}_events`;
    this.#eventPrefix = `${prefix}.ev.`;
    this.#requestPrefix = `${prefix}.rq.`;
    this.#directPrefix = `${prefix}.dl.`;
    void this.#watchStatus(onStatus);
  }

  async #watchStatus(onStatus: NatsBusOptions["onStatus"]): Promise<void> {
    for await (const s of this.#nc.status()) {
      switch (s.type) {
        case "disconnect":
          this.#connected = false;
          this.#lastError = `disconnected from ${s.server}`;
          onStatus?.({ type: s.type, server: s.server });
          break;
        case "reconnect":
          this.#connected = true;
          this.#reconnects++;
          this.#lastError = undefined;
          onStatus?.({ type: s.type, server: s.server });
          // A NATS server that came back without its store (or another server of the list) lacks the stream.
          this.ensureStream().catch((err: unknown) =>
            onStatus?.({ type: "error", error: `stream setup after reconnect: ${err instanceof Error ? err.message : String(err)}` }),
          );
          break;
        case "error":
          this.#lastError = s.error.message;
          onStatus?.({ type: s.type, error: s.error.message });
          break;
        case "close":
          this.#connected = false;
          onStatus?.({ type: s.type });
          return;
        default:
      }
    }
  }

  /** Creates the stream or brings an existing one to the configured limits. */
  async ensureStream(): Promise<void> {
    const limits = this.#limits;
    const jsm = await jetstreamManager(this.#nc);
    const config: Partial<StreamConfig> & { name: string } = {
      name: this.#stream,
      subjects: [`${this.#eventPrefix}>`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      max_age: limits.maxAgeMs * 1_000_000,
      max_bytes: limits.maxBytes,
      num_replicas: limits.replicas,
    };
    const exists = await jsm.streams.info(this.#stream).then(
      () => true,
      (err: unknown) => {
        if (err instanceof Error && /stream not found/i.test(err.message)) return false;
        throw err;
      },
    );
    if (exists) await jsm.streams.update(this.#stream, config);
    else await jsm.streams.add(config);
  }

  health(): BusHealth {
    return { connected: this.#connected, reconnects: this.#reconnects, ...(this.#lastError && !this.#connected ? { error: this.#lastError } : {}) };
  }

  #checkSubject(subject: string): void {
    if (!isValidSubject(subject)) throw new RozError("invalid_argument", `invalid subject "${subject}"`);
  }

  async publish(subject: string, data: Uint8Array, headers?: Record<string, string>): Promise<number> {
    this.#checkSubject(subject);
    const h = toHeaders(headers);
    try {
      const ack = await this.#js.publish(this.#eventPrefix + subject, data, h ? { headers: h } : {});
      return ack.seq;
    } catch (err) {
      throw new RozError("unavailable", `could not publish on "${subject}": ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  subscribe(filter: string, options: SubscribeOptions): Subscription {
    const subscription = new NatsSubscription(
      options.maxPending ?? DEFAULT_MAX_PENDING,
      (s) => s.slice(this.#eventPrefix.length),
      (s) => this.#subscriptions.delete(s),
    );
    this.#subscriptions.add(subscription);
    // "New only" means after the stream's last sequence as the server answers the stream-info
    // request; `ready` resolves once that start is fixed.
    const start = options.from === "new" ? this.#lastSeq() : Promise.resolve(options.from.afterSeq);
    void this.#consume(subscription, this.#eventPrefix + filter, start, options.from).catch(() => subscription.close());
    return subscription;
  }

  #lastSeq(): Promise<number> {
    return this.#nc
      .request(`$JS.API.STREAM.INFO.${this.#stream}`, undefined, { timeout: API_TIMEOUT_MS })
      .then((m) => (m.json() as { state?: { last_seq?: number } }).state?.last_seq ?? 0);
  }

  async #consume(subscription: NatsSubscription, filter: string, start: Promise<number>, from: SubscribeFrom): Promise<void> {
    const afterSeq = await start;
    if (subscription.closed) return;
    const consumer = await this.#js.consumers.get(this.#stream, {
      filter_subjects: filter,
      // From the first kept message when asked for everything (sequence 1 may have aged out).
      ...(from !== "new" && afterSeq === 0 ? { deliver_policy: DeliverPolicy.All } : { opt_start_seq: afterSeq + 1 }),
    });
    const messages = await consumer.consume({ callback: (m) => subscription.offer(m), expires: CONSUME_EXPIRES_MS, max_messages: PULL_BATCH });
    subscription.attach(messages);
    subscription.started();
    void messages.closed().then(() => subscription.close());
  }

  async request(subject: string, data: Uint8Array, options: { timeoutMs?: number; headers?: Record<string, string> } = {}): Promise<Uint8Array> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const h = toHeaders(options.headers);
    let reply;
    try {
      reply = await this.#nc.request(this.#requestPrefix + subject, data, { timeout: timeoutMs, ...(h ? { headers: h } : {}) });
    } catch (err) {
      throw new RozError("unavailable", `no reply on "${subject}": ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
        ...(err instanceof RequestError && err.isNoResponders() ? { details: { noResponders: true } } : {}),
      });
    }
    const reason = reply.headers?.get(ERROR_REASON);
    if (reason) throw new RozError(isReason(reason) ? reason : "internal", reply.headers?.get(ERROR_MESSAGE) || undefined);
    return reply.data;
  }

  serve(subject: string, handler: RequestHandler): Responder {
    if (this.#responders.has(subject)) throw new RozError("conflict", `"${subject}" is already served`);
    const sub = this.#nc.subscribe(this.#requestPrefix + subject, {
      callback: (err, msg) => {
        if (err) return;
        void handler(msg.data, fromHeaders(msg.headers)).then(
          (answer) => msg.respond(answer),
          (error: unknown) => {
            const h = natsHeaders();
            h.set(ERROR_REASON, error instanceof RozError ? error.reason : "internal");
            h.set(ERROR_MESSAGE, error instanceof Error ? error.message : String(error));
            msg.respond(new Uint8Array(0), { headers: h });
          },
        );
      },
    });
    this.#responders.set(subject, sub);
    return {
      // The server has the subscription once a flush (PING/PONG) after it comes back.
      ready: this.#nc.flush().catch(() => undefined),
      close: () => {
        if (this.#responders.get(subject) !== sub) return;
        this.#responders.delete(subject);
        sub.unsubscribe();
      },
    };
  }

  send(subject: string, data: Uint8Array, headers?: Record<string, string>): void {
    this.#checkSubject(subject);
    const h = toHeaders(headers);
    try {
      this.#nc.publish(this.#directPrefix + subject, data, h ? { headers: h } : {});
    } catch {
      // A closed connection: at most once means this message is lost, which the reader notices.
    }
  }

  listen(subject: string, options: { maxPending?: number } = {}): Listener {
    this.#checkSubject(subject);
    let sub: NatsCoreSubscription | undefined;
    const queue = new MessageQueue(options.maxPending ?? DEFAULT_MAX_PENDING, () => {
      this.#listeners.delete(queue);
      sub?.unsubscribe();
    });
    sub = this.#nc.subscribe(this.#directPrefix + subject, {
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

  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    for (const s of [...this.#subscriptions]) s.close();
    for (const l of [...this.#listeners]) l.close();
    for (const sub of this.#responders.values()) sub.unsubscribe();
    this.#responders.clear();
    // Drain flushes what is buffered; a connection that cannot drain (server gone) is closed.
    await Promise.race([this.#nc.drain(), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]).catch(() => {});
    await this.#nc.close().catch(() => {});
  }
}
