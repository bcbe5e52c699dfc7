import type { NatsConnection } from "@nats-io/transport-node";
import {
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type StreamConfig,
} from "@nats-io/jetstream";
import { RozError } from "../../errors/index.ts";
import type { SubscribeFrom, SubscribeOptions, Subscription } from "../types.ts";
import { DEFAULT_MAX_PENDING } from "./options.ts";
import { NatsSubscription } from "./subscription.ts";
import { checkSubject, toHeaders } from "./wire.ts";

/** JetStream API calls of our own (stream info at subscribe). */
const API_TIMEOUT_MS = 10_000;
/** Pull expiry of a consumer: a lost consumer (server restart) is noticed after two missed heartbeats of half this. */
const CONSUME_EXPIRES_MS = 5_000;
/** Messages a consumer asks for at once (refilled at half): large enough that refills never stall delivery. */
const PULL_BATCH = 1_000;

export interface StreamLimits {
  maxAgeMs: number;
  maxBytes: number;
  replicas: number;
}

/**
 * The stored side of the bus: one JetStream stream `<prefix>_events` holding `<prefix>.ev.>`,
 * appended to by `publish` and read by ordered consumers, one per subscription.
 */
export class EventStream {
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #name: string;
  readonly #subjectPrefix: string;
  readonly #limits: StreamLimits;
  readonly #subscriptions = new Set<NatsSubscription>();

  constructor(nc: NatsConnection, prefix: string, limits: StreamLimits) {
    this.#nc = nc;
    this.#js = jetstream(nc);
    this.#name = `${prefix}_events`;
    this.#subjectPrefix = `${prefix}.ev.`;
    this.#limits = limits;
  }

  /** Creates the stream or brings an existing one to the configured limits. */
  async ensure(): Promise<void> {
    const limits = this.#limits;
    const jsm = await jetstreamManager(this.#nc);
    const config: Partial<StreamConfig> & { name: string } = {
      name: this.#name,
      subjects: [`${this.#subjectPrefix}>`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      max_age: limits.maxAgeMs * 1_000_000,
      max_bytes: limits.maxBytes,
      num_replicas: limits.replicas,
    };
    const exists = await jsm.streams.info(this.#name).then(
      () => true,
      (err: unknown) => {
        if (err instanceof Error && /stream not found/i.test(err.message)) return false;
        throw err;
      },
    );
    if (exists) await jsm.streams.update(this.#name, config);
    else await jsm.streams.add(config);
  }

  async publish(subject: string, data: Uint8Array, headers?: Record<string, string>): Promise<number> {
    checkSubject(subject);
    const h = toHeaders(headers);
    try {
      const ack = await this.#js.publish(this.#subjectPrefix + subject, data, h ? { headers: h } : {});
      return ack.seq;
    } catch (err) {
      throw new RozError("unavailable", `could not publish on "${subject}": ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  subscribe(filter: string, options: SubscribeOptions): Subscription {
    const subscription = new NatsSubscription(
      options.maxPending ?? DEFAULT_MAX_PENDING,
      (s) => s.slice(this.#subjectPrefix.length),
      (s) => this.#subscriptions.delete(s),
    );
    this.#subscriptions.add(subscription);
    // "New only" means after the stream's last sequence as the server answers the stream-info
    // request; `ready` resolves once that start is fixed.
    const start = options.from === "new" ? this.#lastSeq() : Promise.resolve(options.from.afterSeq);
    void this.#consume(subscription, this.#subjectPrefix + filter, start, options.from).catch(() => subscription.close());
    return subscription;
  }

  #lastSeq(): Promise<number> {
    return this.#nc
      .request(`$JS.API.STREAM.INFO.${this.#name}`, undefined, { timeout: API_TIMEOUT_MS })
      .then((m) => (m.json() as { state?: { last_seq?: number } }).state?.last_seq ?? 0);
  }

  async #consume(subscription: NatsSubscription, filter: string, start: Promise<number>, from: SubscribeFrom): Promise<void> {
    const afterSeq = await start;
    if (subscription.closed) return;
    const consumer = await this.#js.consumers.get(this.#name, {
      filter_subjects: filter,
      // From the first kept message when asked for everything (sequence 1 may have aged out).
      ...(from !== "new" && afterSeq === 0 ? { deliver_policy: DeliverPolicy.All } : { opt_start_seq: afterSeq + 1 }),
    });
    const messages = await consumer.consume({ callback: (m) => subscription.offer(m), expires: CONSUME_EXPIRES_MS, max_messages: PULL_BATCH });
    subscription.attach(messages);
    subscription.started();
    void messages.closed().then(() => subscription.close());
  }

  /** Ends every subscription. */
  close(): void {
    for (const s of [...this.#subscriptions]) s.close();
  }
}
