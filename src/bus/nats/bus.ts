import type { NatsConnection } from "@nats-io/transport-node";
import { RozError } from "../../errors/index.ts";
import type { BusHealth, EventBus, Listener, RequestHandler, Responder, SubscribeOptions, Subscription } from "../types.ts";
import { ConnectionHealth, connectNats } from "./connection.ts";
import { DirectLines } from "./lines.ts";
import type { NatsBusOptions } from "./options.ts";
import { Requests } from "./requests.ts";
import { EventStream } from "./stream.ts";

export type { NatsBusOptions } from "./options.ts";

const DEFAULT_PREFIX = "roz";
const DEFAULT_MAX_AGE_MS = 24 * 3600_000;
const DEFAULT_MAX_BYTES = 1024 ** 3;

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
  const nc = await connectNats(options);
  const limits = { maxAgeMs: options.maxAgeMs ?? DEFAULT_MAX_AGE_MS, maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES, replicas: options.replicas ?? 1 };
  const stream = new EventStream(nc, prefix, limits);
  const bus = new NatsEventBus(nc, prefix, stream, options.onStatus);
  try {
    await stream.ensure();
  } catch (err) {
    await bus.close();
    throw new RozError("unavailable", `cannot set up the JetStream stream on ${options.servers}: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  return bus;
}

/** One connection serving the bus's three parts: the stored event stream, request/reply and direct lines. */
class NatsEventBus implements NatsBus {
  readonly kind = "nats";
  readonly #nc: NatsConnection;
  readonly #stream: EventStream;
  readonly #requests: Requests;
  readonly #lines: DirectLines;
  readonly #health: ConnectionHealth;
  #closing = false;

  constructor(nc: NatsConnection, prefix: string, stream: EventStream, onStatus: NatsBusOptions["onStatus"]) {
    this.#nc = nc;
    this.#stream = stream;
    this.#requests = new Requests(nc, prefix);
    this.#lines = new DirectLines(nc, prefix);
    // A NATS server that came back without its store (or another server of the list) lacks the stream.
    this.#health = new ConnectionHealth(nc, onStatus, () => stream.ensure());
  }

  health(): BusHealth {
    return this.#health.health();
  }

  publish(subject: string, data: Uint8Array, headers?: Record<string, string>): Promise<number> {
    return this.#stream.publish(subject, data, headers);
  }

  subscribe(filter: string, options: SubscribeOptions): Subscription {
    return this.#stream.subscribe(filter, options);
  }

  request(subject: string, data: Uint8Array, options?: { timeoutMs?: number; headers?: Record<string, string> }): Promise<Uint8Array> {
    return this.#requests.request(subject, data, options);
  }

  serve(subject: string, handler: RequestHandler): Responder {
    return this.#requests.serve(subject, handler);
  }

  send(subject: string, data: Uint8Array, headers?: Record<string, string>): void {
    this.#lines.send(subject, data, headers);
  }

  listen(subject: string, options?: { maxPending?: number }): Listener {
    return this.#lines.listen(subject, options);
  }

  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#stream.close();
    this.#lines.close();
    this.#requests.close();
    // Drain flushes what is buffered; a connection that cannot drain (server gone) is closed.
    await Promise.race([this.#nc.drain(), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]).catch(() => {});
    await this.#nc.close().catch(() => {});
  }
}
