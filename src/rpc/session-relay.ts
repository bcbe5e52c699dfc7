import { randomUUID } from "node:crypto";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { type EventBus, isNoResponders, type Listener } from "../bus/index.ts";
import { RozError, reasons, toRozError, type Reason } from "../errors/index.ts";
import type { Principal, SessionStream } from "../session/index.ts";
import { type SessionRequest, SessionRequestSchema, type SessionResponse, SessionResponseSchema } from "../gen/roz/v1/agent_pb.js";
import type { EventFormat } from "./event-format.ts";
import { createStreamWriter, preEncoded } from "./response-writer.ts";

/**
 * A session stream served by one node for a session another node owns (session-behaviour.md
 * §10): the owner runs an ordinary `SessionStream` for the remote client (so ordering, `seq`,
 * resent requests and replay are the owner's own) and sends each response, as protobuf bytes,
 * on a direct line of the bus; requests go to the owner by request/reply, one at a time, in the
 * client's order. A relay that loses a message or its owner ends with UNAVAILABLE, and its
 * `lastSeq` says where to go on: the relaying node's `StreamRoute` finds the session again
 * (or, failing that, the client re-attaches), and the store fills the gap.
 */
export interface RelayedStream {
  readonly sessionId: string;
  /** The highest event seq relayed so far (at first the `afterSeq` it was opened with): where a re-attach goes on. */
  readonly lastSeq: number;
  /** The owner's responses in order; ends when the owner's stream ends, throws its fatal error. */
  responses(json: boolean): AsyncGenerator<SessionResponse>;
  /**
   * Hands one client request to the owner's stream; resolves with true once the owner handled
   * it, false when it could not be delivered (the relay has ended: its responses throw why).
   */
  forward(request: SessionRequest): Promise<boolean>;
  /** The client half-closed (false: not delivered, as for `forward`). */
  requestsEnded(): Promise<boolean>;
  /** The client went away. */
  transportBroken(): void;
  /** Ends the relayed stream with `error` (revoked credentials): the owner reports it and ends (false: not delivered). */
  fail(error: RozError): Promise<boolean>;
}

/** What the owner needs to host relayed streams: a stream for a principal, handled like a local call's. */
export interface RelayHost {
  openStream(principal: Principal): SessionStream;
  /** Applies one decoded-or-not client request to a hosted stream, as the StreamSession reader does. */
  apply(stream: SessionStream, request: SessionRequest): Promise<void>;
  /** Delivers a request to a live session of this node (see `SessionRelay.deliver`). */
  deliver(principal: Principal, sessionId: string, request: SessionRequest): Promise<number>;
  /** Hosted streams are counted with the local ones (shutdown ends them). */
  track(stream: SessionStream, open: boolean): void;
  /** True while this node drains: it hosts no new relays. */
  draining(): boolean;
  log: { warn(obj: object, msg?: string): void };
}

export interface SessionRelay {
  /** Opens a relayed stream on `ownerNode`, resuming `sessionId` after `afterSeq`. */
  open(ownerNode: string, principal: Principal, sessionId: string, afterSeq: number, format: EventFormat): Promise<RelayedStream>;
  /**
   * Delivers one request to a session `ownerNode` runs (SendToSession received here); resolves
   * with the session's last seq when it was accepted, as the owner's SendToSession would.
   */
  deliver(ownerNode: string, principal: Principal, sessionId: string, request: SessionRequest): Promise<number>;
  /** Serves this node's side: hosting streams for other nodes' clients. */
  host(host: RelayHost): void;
  /** Relayed streams this node serves to its clients, and hosts for other nodes (metrics). */
  readonly relayedStreams: number;
  readonly hostedStreams: number;
  /** True once `shutdown()` ran: this node's clients are going elsewhere, nothing is moved here. */
  readonly shuttingDown: boolean;
  /** Ends every relayed stream of this node's clients with `shutting_down`. */
  shutdown(): void;
  close(): void;
}

const EMPTY = new Uint8Array(0);
const OP = "Roz-Op";
const RELAY = "Roz-Relay";
const TENANT = "Roz-Tenant";
const KEY = "Roz-Key";
const SCOPES = "Roz-Scopes";
const SESSION = "Roz-Session";
const AFTER = "Roz-After-Seq";
const FORMAT = "Roz-Format";
const HOW = "Roz-How";
const REASON = "Roz-Reason";
const MESSAGE = "Roz-Message";
/** Each response's number on the line (1-based), so that a lost one is noticed. */
const NUMBER = "Roz-N";
/** The seq of the event a response carries, so that a relay knows where a re-attach goes on. */
const SEQ = "Roz-Seq";
/** The last message of a line: `ok`, or `error` with REASON and MESSAGE. */
const END = "Roz-End";

/**
 * How often a node tells each owner which of its relays are still wanted (which also notices an
 * owner that is gone); an owner ends those not wanted for `KEEP_ROUNDS` rounds.
 */
const KEEP_MS = 2_000;
const KEEP_ROUNDS = 10;
/** Responses buffered for a slow client of a relayed stream before the relay gives up (it then re-attaches from the store). */
const LINE_BUFFER = 100_000;

const token = (nodeId: string): string => nodeId.replace(/[^A-Za-z0-9_-]/g, "_");
const hostSubject = (nodeId: string): string => `node.${token(nodeId)}.relay`;
const lineSubject = (relayId: string): string => `relay.${relayId}`;
const isReason = (value: string | undefined): value is Reason => value !== undefined && Object.hasOwn(reasons, value);
const errorOf = (headers: Readonly<Record<string, string>>): RozError =>
  new RozError(isReason(headers[REASON]) ? headers[REASON] : "unavailable", headers[MESSAGE] || "the session's node ended the relayed stream");
const principalHeaders = (principal: Principal): Record<string, string> => ({
  [TENANT]: principal.tenantId,
  [SCOPES]: principal.scopes.join(","),
  ...(principal.keyId ? { [KEY]: principal.keyId } : {}),
});
const principalOf = (headers: Readonly<Record<string, string>>): Principal => {
  const tenantId = headers[TENANT];
  if (!tenantId) throw new RozError("invalid_argument", "a relay request needs its tenant");
  return { tenantId, scopes: (headers[SCOPES] ?? "").split(",").filter((s) => s !== ""), ...(headers[KEY] ? { keyId: headers[KEY] } : {}) };
};
const ownerLost = (): RozError => new RozError("unavailable", "the node running this session stopped answering; re-attach with your last seq");
const responsesLost = (): RozError => new RozError("unavailable", "the relayed stream lost responses; re-attach with your last seq");

/** A hosted stream: when its client node last wanted it, and how many messages its line carried. */
interface Hosted {
  stream: SessionStream;
  keptAt: number;
  sent: number;
  /** The stream's resume: the client's requests wait for it, as a local stream's reader does. */
  attached: Promise<void>;
}

export function createSessionRelay(bus: EventBus, nodeId: string): SessionRelay {
  const clients = new Map<string, ClientRelay>();
  const hosted = new Map<string, Hosted>();
  let responder: { close(): void } | undefined;
  let shuttingDown = false;
  let sweep: NodeJS.Timeout | undefined;

  const keepTimer = setInterval(() => {
    const byOwner = new Map<string, ClientRelay[]>();
    for (const c of clients.values()) byOwner.set(c.owner, [...(byOwner.get(c.owner) ?? []), c]);
    for (const [owner, relays] of byOwner) {
      const ids = new TextEncoder().encode(relays.map((r) => r.id).join("\n"));
      void bus.request(hostSubject(owner), ids, { headers: { [OP]: "keep" } }).then(
        (reply) => {
          const unknown = new Set<string>();
          const sent = new Map<string, number>();
          for (const line of new TextDecoder().decode(reply).split("\n")) {
            const [id = "", n] = line.split(" ");
            if (n === undefined) unknown.add(id);
            else sent.set(id, Number(n));
          }
          for (const r of relays) r.kept({ known: !unknown.has(r.id), sent: sent.get(r.id) });
        },
        (err: unknown) => {
          for (const r of relays) r.kept({ known: false, gone: isNoResponders(err) });
        },
      );
    }
  }, KEEP_MS);
  keepTimer.unref();

  class ClientRelay implements RelayedStream {
    readonly id: string;
    readonly owner: string;
    readonly sessionId: string;
    lastSeq: number;
    readonly #line: Listener;
    #error: RozError | undefined;
    #missedKeeps = 0;

    constructor(id: string, owner: string, sessionId: string, afterSeq: number, line: Listener) {
      this.id = id;
      this.owner = owner;
      this.sessionId = sessionId;
      this.lastSeq = afterSeq;
      this.#line = line;
    }

    /**
     * One keep round's answer: whether the owner still hosts this relay and how many messages
     * it sent on the line, or that nobody serves the owner's subject (`gone`: its process is gone,
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
      clients.delete(this.id);
      this.#line.close();
    }

    async *responses(json: boolean): AsyncGenerator<SessionResponse> {
      let expected = 1;
      try {
        for await (const m of this.#line) {
          if (Number(m.headers[NUMBER]) !== expected++ || this.#line.dropped > 0) throw responsesLost();
          const end = m.headers[END];
          if (end === "ok") return;
          if (end !== undefined) throw errorOf(m.headers);
          const seq = Number(m.headers[SEQ] ?? 0);
          if (seq > this.lastSeq) this.lastSeq = seq;
          yield json ? fromBinary(SessionResponseSchema, m.data) : preEncoded(m.data);
        }
        throw this.#error ?? ownerLost();
      } finally {
        this.end(undefined);
      }
    }

    async #tell(headers: Record<string, string>, data = EMPTY): Promise<boolean> {
      try {
        await bus.request(hostSubject(this.owner), data, { headers: { ...headers, [RELAY]: this.id } });
        return true;
      } catch (err) {
        const error = toRozError(err);
        this.end(error.reason === "not_found" || isNoResponders(err) ? ownerLost() : error);
        return false;
      }
    }

    forward(request: SessionRequest): Promise<boolean> {
      return this.#tell({ [OP]: "request" }, toBinary(SessionRequestSchema, request));
    }

    requestsEnded(): Promise<boolean> {
      return this.#tell({ [OP]: "end", [HOW]: "closed" });
    }

    transportBroken(): void {
      if (!clients.has(this.id)) return;
      void this.#tell({ [OP]: "end", [HOW]: "broken" });
      this.end(undefined);
    }

    fail(error: RozError): Promise<boolean> {
      return this.#tell({ [OP]: "end", [HOW]: "fail", [REASON]: error.reason, [MESSAGE]: error.message });
    }
  }

  /** Runs a hosted stream's output onto its line until it ends. */
  async function pump(relayId: string, hostedStream: Hosted, format: EventFormat, host: RelayHost): Promise<void> {
    const { stream } = hostedStream;
    const line = lineSubject(relayId);
    const write = createStreamWriter(format, false);
    const send = (data: Uint8Array, headers: Record<string, string> = {}): void => bus.send(line, data, { ...headers, [NUMBER]: String(++hostedStream.sent) });
    try {
      for await (const item of stream.output) {
        if (item.kind === "fatal") {
          send(EMPTY, { [END]: "error", [REASON]: item.error.reason, [MESSAGE]: item.error.message });
          return;
        }
        const seq: Record<string, string> = item.item.seq > 0 ? { [SEQ]: String(item.item.seq) } : {};
        for (const message of write(item.item)) send(toBinary(SessionResponseSchema, message), seq);
      }
      send(EMPTY, { [END]: "ok" });
    } finally {
      hosted.delete(relayId);
      host.track(stream, false);
      stream.transportBroken();
    }
  }

  async function handle(host: RelayHost, data: Uint8Array, headers: Readonly<Record<string, string>>): Promise<Uint8Array> {
    const op = headers[OP];
    if (op === "keep") {
      const now = Date.now();
      // Per relay a line: its id alone when unknown, else the id and the messages sent on its
      // line so far (a node that reads only the unknown ones takes the others as known).
      const answer: string[] = [];
      for (const id of new TextDecoder().decode(data).split("\n")) {
        const h = hosted.get(id);
        if (h) h.keptAt = now;
        answer.push(h ? `${id} ${h.sent}` : id);
      }
      return new TextEncoder().encode(answer.join("\n"));
    }
    if (op === "deliver") {
      const sessionId = headers[SESSION];
      if (!sessionId) throw new RozError("invalid_argument", "a delivery needs its session");
      const lastSeq = await host.deliver(principalOf(headers), sessionId, fromBinary(SessionRequestSchema, data));
      return new TextEncoder().encode(String(lastSeq));
    }
    const relayId = headers[RELAY];
    if (!relayId) throw new RozError("invalid_argument", "a relay request needs its relay id");
    if (op === "open") {
      if (host.draining()) throw new RozError("shutting_down");
      const sessionId = headers[SESSION];
      if (!sessionId) throw new RozError("invalid_argument", "a relay needs its session");
      const principal = principalOf(headers);
      const stream = host.openStream(principal);
      const h: Hosted = { stream, keptAt: Date.now(), sent: 0, attached: Promise.resolve() };
      hosted.set(relayId, h);
      host.track(stream, true);
      void pump(relayId, h, (headers[FORMAT] ?? "flat") as EventFormat, host).catch((err: unknown) => host.log.warn({ err }, "relayed stream failed"));
      // Not awaited here: a long replay must not hold the open's reply past its timeout.
      h.attached = stream.resume(sessionId, Number(headers[AFTER] ?? "0"));
      return EMPTY;
    }
    const h = hosted.get(relayId);
    if (!h) throw new RozError("not_found", "this relayed stream has ended");
    await h.attached;
    if (op === "request") {
      await host.apply(h.stream, fromBinary(SessionRequestSchema, data));
    } else if (op === "end") {
      const how = headers[HOW];
      if (how === "closed") await h.stream.requestsEnded();
      else if (how === "fail") await h.stream.fail(errorOf(headers));
      else h.stream.transportBroken();
    } else {
      throw new RozError("invalid_argument", `unknown relay request "${op}"`);
    }
    return EMPTY;
  }

  return {
    async open(ownerNode, principal, sessionId, afterSeq, format) {
      const id = randomUUID();
      const line = bus.listen(lineSubject(id), { maxPending: LINE_BUFFER });
      await line.ready;
      const relay = new ClientRelay(id, ownerNode, sessionId, afterSeq, line);
      clients.set(id, relay);
      try {
        await bus.request(hostSubject(ownerNode), EMPTY, {
          headers: {
            [OP]: "open",
            [RELAY]: id,
            ...principalHeaders(principal),
            [SESSION]: sessionId,
            [AFTER]: String(afterSeq),
            [FORMAT]: format,
          },
        });
      } catch (err) {
        relay.end(undefined);
        const error = toRozError(err);
        throw error.reason === "shutting_down" || error.reason === "unavailable"
          ? new RozError("unavailable", "the session's node is not answering; retry")
          : error;
      }
      return relay;
    },
    async deliver(ownerNode, principal, sessionId, request) {
      const reply = await bus.request(hostSubject(ownerNode), toBinary(SessionRequestSchema, request), {
        headers: { [OP]: "deliver", ...principalHeaders(principal), [SESSION]: sessionId },
      });
      return Number(new TextDecoder().decode(reply));
    },
    host(host) {
      responder = bus.serve(hostSubject(nodeId), (data, headers) => handle(host, data, headers));
      // Hosted streams whose client node stopped wanting them (that node died) are let go.
      sweep = setInterval(() => {
        const before = Date.now() - KEEP_MS * KEEP_ROUNDS;
        for (const h of hosted.values()) if (h.keptAt < before) h.stream.transportBroken();
      }, KEEP_MS);
      sweep.unref();
    },
    get relayedStreams() {
      return clients.size;
    },
    get hostedStreams() {
      return hosted.size;
    },
    get shuttingDown() {
      return shuttingDown;
    },
    shutdown() {
      shuttingDown = true;
      for (const c of [...clients.values()]) {
        c.transportBroken();
        c.end(new RozError("shutting_down"));
      }
    },
    close() {
      clearInterval(keepTimer);
      if (sweep) clearInterval(sweep);
      responder?.close();
    },
  };
}
