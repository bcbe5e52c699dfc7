import { RozError } from "../errors/index.ts";
import type { OutgoingEvent, Principal, SessionStream } from "../session/index.ts";
import type { NodeChannel } from "./channel.ts";
import { errorOf, type ReplyTo } from "./codec.ts";
import { KEEP_MS, KEEP_ROUNDS } from "./relay-keep.ts";

/**
 * What the owner needs to host relayed streams, given by the composition root: session requests
 * arrive and responses leave as protobuf bytes, which only src/rpc reads and writes.
 */
export interface RelayHost {
  /** A stream for a principal, handled like a local call's. */
  openStream(principal: Principal): SessionStream;
  /** Applies one client request (protobuf bytes) to a hosted stream, as the StreamSession reader does. */
  apply(stream: SessionStream, request: Uint8Array): Promise<void>;
  /** Delivers a request (protobuf bytes) to a live session of this node; resolves with its last seq once accepted. */
  deliver(principal: Principal, sessionId: string, request: Uint8Array): Promise<number>;
  /** How a stream in event format `format` encodes each item: its responses as protobuf bytes. */
  encoder(format: string): (item: OutgoingEvent) => Uint8Array[];
  /** Hosted streams are counted with the local ones (shutdown ends them). */
  track(stream: SessionStream, open: boolean): void;
  /** True while this node drains: it hosts no new relays. */
  draining(): boolean;
  log: { warn(obj: object, msg?: string): void };
}

/** A hosted stream: when its client node last wanted it, and how many messages its line carried. */
interface Hosted {
  stream: SessionStream;
  keptAt: number;
  sent: number;
  /** The stream's resume: the client's requests wait for it, as a local stream's reader does. */
  attached: Promise<void>;
}

const DONE: ReplyTo<"relay-request"> = {};

/**
 * The owner's side of relayed streams (session-behaviour.md §10): an ordinary `SessionStream`
 * per remote client (so ordering, `seq`, resent requests and replay are the owner's own), its
 * responses sent in order on the relay's line.
 */
export class RelayHosting {
  readonly #channel: NodeChannel;
  readonly #host: RelayHost;
  readonly #hosted = new Map<string, Hosted>();
  readonly #served: { close(): void };
  readonly #sweep: NodeJS.Timeout;

  constructor(channel: NodeChannel, host: RelayHost) {
    this.#channel = channel;
    this.#host = host;
    this.#served = channel.serve({
      deliver: async ({ principal, sessionId, request }) => ({ lastSeq: await host.deliver(principal, sessionId, request) }),
      "relay-open": async (open) => this.#open(open.relayId, open.principal, open.sessionId, open.afterSeq, open.format),
      "relay-request": async ({ relayId, request }) => {
        await host.apply((await this.#attached(relayId)).stream, request);
        return DONE;
      },
      "relay-closed": async ({ relayId }) => {
        await (await this.#attached(relayId)).stream.requestsEnded();
        return DONE;
      },
      "relay-fail": async (fail) => {
        await (await this.#attached(fail.relayId)).stream.fail(errorOf(fail));
        return DONE;
      },
      "relay-broken": async ({ relayId }) => {
        (await this.#attached(relayId)).stream.transportBroken();
        return DONE;
      },
      "relay-keep": async ({ relayIds }) => ({ sent: this.#keep(relayIds) }),
    });
    // Hosted streams whose client node stopped wanting them (that node died) are let go.
    this.#sweep = setInterval(() => {
      const before = Date.now() - KEEP_MS * KEEP_ROUNDS;
      for (const h of this.#hosted.values()) if (h.keptAt < before) h.stream.transportBroken();
    }, KEEP_MS);
    this.#sweep.unref();
  }

  get size(): number {
    return this.#hosted.size;
  }

  #open(relayId: string, principal: Principal, sessionId: string, afterSeq: number, format: string): ReplyTo<"relay-open"> {
    if (this.#host.draining()) throw new RozError("shutting_down");
    const stream = this.#host.openStream(principal);
    const hosted: Hosted = { stream, keptAt: Date.now(), sent: 0, attached: Promise.resolve() };
    this.#hosted.set(relayId, hosted);
    this.#host.track(stream, true);
    void this.#pump(relayId, hosted, this.#host.encoder(format)).catch((err: unknown) => this.#host.log.warn({ err }, "relayed stream failed"));
    // Not awaited here: a long replay must not hold the open's reply past its timeout.
    hosted.attached = stream.resume(sessionId, afterSeq);
    return {};
  }

  /** The hosted stream once its resume is done. */
  async #attached(relayId: string): Promise<Hosted> {
    const hosted = this.#hosted.get(relayId);
    if (!hosted) throw new RozError("not_found", "this relayed stream has ended");
    await hosted.attached;
    return hosted;
  }

  /** Marks the asked relays wanted; per relay the messages its line carried, or null when it is not hosted. */
  #keep(relayIds: readonly string[]): (number | null)[] {
    const now = Date.now();
    return relayIds.map((id) => {
      const hosted = this.#hosted.get(id);
      if (hosted === undefined) return null;
      hosted.keptAt = now;
      return hosted.sent;
    });
  }

  /** Runs a hosted stream's output onto its line until it ends. */
  async #pump(relayId: string, hosted: Hosted, encode: (item: OutgoingEvent) => Uint8Array[]): Promise<void> {
    const { stream } = hosted;
    try {
      for await (const item of stream.output) {
        if (item.kind === "fatal") {
          this.#channel.send(relayId, { kind: "error", n: ++hosted.sent, reason: item.error.reason, message: item.error.message });
          return;
        }
        const { seq } = item.item;
        for (const data of encode(item.item)) this.#channel.send(relayId, { kind: "response", n: ++hosted.sent, seq, data });
      }
      this.#channel.send(relayId, { kind: "end", n: ++hosted.sent });
    } finally {
      this.#hosted.delete(relayId);
      this.#host.track(stream, false);
      stream.transportBroken();
    }
  }

  close(): void {
    clearInterval(this.#sweep);
    this.#served.close();
  }
}
