import { randomUUID } from "node:crypto";
import { isNoResponders } from "../bus/index.ts";
import { RozError, toRozError } from "../errors/index.ts";
import type { Principal } from "../session/index.ts";
import type { Line, NodeChannel } from "./channel.ts";
import { type ClusterRequest, errorOf } from "./codec.ts";
import { byOwner, KEEP_MS } from "./relay-keep.ts";

/** Responses buffered for a slow client of a relayed stream before the relay gives up (it then re-attaches from the store). */
const LINE_BUFFER = 100_000;

const ownerLost = (): RozError => new RozError("unavailable", "the node running this session stopped answering; re-attach with your last seq");
const responsesLost = (): RozError => new RozError("unavailable", "the relayed stream lost responses; re-attach with your last seq");

/** A relay request, with the relay's id added when sent. */
type RelayRequest = DistributiveOmit<Extract<ClusterRequest, { relayId: string }>, "relayId">;
type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

/**
 * This node's side of one relayed stream (session-behaviour.md §10): the client's requests go
 * to the owner one at a time, in the client's order; the owner's responses arrive on the
 * relay's line. A relay that loses a message or its owner ends with UNAVAILABLE, and `lastSeq`
 * says where a re-attach goes on.
 */
export class ClientRelay {
  readonly id: string;
  readonly owner: string;
  readonly sessionId: string;
  /** The highest event seq relayed so far (at first the `afterSeq` it was opened with). */
  lastSeq: number;
  readonly #channel: NodeChannel;
  readonly #relays: Map<string, ClientRelay>;
  readonly #line: Line;
  #error: RozError | undefined;
  #missedKeeps = 0;

  constructor(channel: NodeChannel, relays: Map<string, ClientRelay>, owner: string, sessionId: string, afterSeq: number) {
    this.id = randomUUID();
    this.owner = owner;
    this.sessionId = sessionId;
    this.lastSeq = afterSeq;
    this.#channel = channel;
    this.#relays = relays;
    this.#line = channel.listen(this.id, LINE_BUFFER);
  }

  /** Counts the relay among this node's once the owner's sends reach its line. */
  async listening(): Promise<void> {
    await this.#line.ready;
    this.#relays.set(this.id, this);
  }

  /**
   * One keep round's answer: whether the owner still hosts this relay and how many messages
   * it sent on the line, or that nobody serves the owner's node (`gone`: its process is gone,
   * no need to wait for a second miss).
   */
  kept(answer: { known: boolean; sent?: number | undefined; gone?: boolean }): void {
    if (!answer.known) {
      if (answer.gone || ++this.#missedKeeps >= 2) this.end(ownerLost());
      return;
    }
    this.#missedKeeps = 0;
    // The answer left the owner after every message it counts, on the same connection, so
    // they arrived first: fewer here means the last ones were lost (core NATS while a node
    // reconnects), which no later response may come to reveal.
    if (answer.sent !== undefined && this.#line.received < answer.sent) {
      this.#error ??= responsesLost();
      this.transportBroken();
    }
  }

  /** Ends the client side with `error` (the responses throw it). */
  end(error: RozError | undefined): void {
    this.#error ??= error;
    this.#relays.delete(this.id);
    this.#line.close();
  }

  /** The owner's responses in order, each decoded by `decode`; ends when the owner's stream ends, throws its fatal error. */
  async *responses<T>(decode: (bytes: Uint8Array) => T): AsyncGenerator<T> {
    let expected = 1;
    try {
      for await (const m of this.#line) {
        if (m.n !== expected++ || this.#line.dropped > 0) throw responsesLost();
        if (m.kind === "end") return;
        if (m.kind === "error") throw errorOf(m);
        if (m.seq > this.lastSeq) this.lastSeq = m.seq;
        yield decode(m.data);
      }
      throw this.#error ?? ownerLost();
    } finally {
      this.end(undefined);
    }
  }

  /** Resolves with true once the owner handled `request`; false when it could not (the relay has ended: its responses throw why). */
  async #tell(request: RelayRequest): Promise<boolean> {
    try {
      await this.#channel.ask(this.owner, { ...request, relayId: this.id } as Extract<ClusterRequest, { relayId: string }>);
      return true;
    } catch (err) {
      const error = toRozError(err);
      this.end(error.reason === "not_found" || isNoResponders(err) ? ownerLost() : error);
      return false;
    }
  }

  /** Hands one client request (protobuf bytes) to the owner's stream. */
  forward(request: Uint8Array): Promise<boolean> {
    return this.#tell({ kind: "relay-request", request });
  }

  /** The client half-closed. */
  requestsEnded(): Promise<boolean> {
    return this.#tell({ kind: "relay-closed" });
  }

  /** The client went away. */
  transportBroken(): void {
    if (!this.#relays.has(this.id)) return;
    void this.#tell({ kind: "relay-broken" });
    this.end(undefined);
  }

  /** Ends the relayed stream with `error` (revoked credentials): the owner reports it and ends. */
  fail(error: RozError): Promise<boolean> {
    return this.#tell({ kind: "relay-fail", reason: error.reason, message: error.message });
  }
}

/** The relays of this node's clients, kept alive by one request per owner every round. */
export class RelayClients {
  readonly #channel: NodeChannel;
  readonly #relays = new Map<string, ClientRelay>();
  readonly #timer: NodeJS.Timeout;
  #shuttingDown = false;

  constructor(channel: NodeChannel) {
    this.#channel = channel;
    this.#timer = setInterval(() => this.#keep(), KEEP_MS);
    this.#timer.unref();
  }

  get size(): number {
    return this.#relays.size;
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Opens a relayed stream on `ownerNode`, resuming `sessionId` after `afterSeq`. */
  async open(ownerNode: string, principal: Principal, sessionId: string, afterSeq: number, format: string): Promise<ClientRelay> {
    const relay = new ClientRelay(this.#channel, this.#relays, ownerNode, sessionId, afterSeq);
    await relay.listening();
    try {
      await this.#channel.ask(ownerNode, { kind: "relay-open", relayId: relay.id, principal, sessionId, afterSeq, format });
    } catch (err) {
      relay.end(undefined);
      const error = toRozError(err);
      throw error.reason === "shutting_down" || error.reason === "unavailable"
        ? new RozError("unavailable", "the session's node is not answering; retry")
        : error;
    }
    return relay;
  }

  /** Delivers one request (protobuf bytes) to a session `ownerNode` runs; resolves with the session's last seq once accepted. */
  async deliver(ownerNode: string, principal: Principal, sessionId: string, request: Uint8Array): Promise<number> {
    return (await this.#channel.ask(ownerNode, { kind: "deliver", principal, sessionId, request })).lastSeq;
  }

  #keep(): void {
    for (const [owner, relays] of byOwner(this.#relays.values())) {
      this.#channel.ask(owner, { kind: "relay-keep", relayIds: relays.map((r) => r.id) }).then(
        ({ sent }) => {
          for (const [i, r] of relays.entries()) {
            const n = sent[i];
            r.kept(n === null || n === undefined ? { known: false } : { known: true, sent: n });
          }
        },
        (err: unknown) => {
          for (const r of relays) r.kept({ known: false, gone: isNoResponders(err) });
        },
      );
    }
  }

  /** Ends every relay with `shutting_down`: this node's clients are going elsewhere. */
  shutdown(): void {
    this.#shuttingDown = true;
    for (const relay of [...this.#relays.values()]) {
      relay.transportBroken();
      relay.end(new RozError("shutting_down"));
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
