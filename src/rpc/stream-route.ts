import { toBinary } from "@bufbuild/protobuf";
import { type RozError, toRozError } from "../errors/index.ts";
import { type Principal, SessionStream } from "../session/index.ts";
import { type SessionRequest, SessionRequestSchema } from "../gen/roz/v1/agent_pb.js";
import type { EventFormat } from "./event-format.ts";
import type { RelayedStream } from "./relay-port.ts";
import type { StreamSessionDeps } from "./stream-deps.ts";

/** How long a relocating stream waits between two looks for its session. */
const RELOCATE_RETRY_MS = 200;

/** A client request, applied to this node's stream the way the StreamSession reader applies them. */
export type ApplyLocally = (stream: SessionStream, request: SessionRequest) => StepResult;

/** What applying one request gives: "stop" once the stream has ended; a promise while it is being handled. */
export type StepResult = "stop" | "continue" | Promise<"stop" | "continue">;

/**
 * Where one client's session stream is served from: this node's own `SessionStream`, or a
 * relay to the node that owns the session. When a relay is lost retryably (its owner died or
 * stopped answering, or responses were lost on the way), the route finds the session again and
 * goes on after the last seq the client got: relayed to its owner (the same node restarted, or
 * a node that adopted it), or here, adopting it once the old owner's heartbeat has expired (the
 * cut turn then arrives as `interrupted`, like on any adoption). The client's stream stays open
 * meanwhile; requests it sends wait and go to the session's new place. Only when nothing serves
 * the session within `relocateWithinMs`, or this node is shutting down, does the stream end
 * with the relay's retryable error, for the client to re-attach itself.
 */
export class StreamRoute {
  readonly #deps: StreamSessionDeps;
  readonly #principal: Principal;
  readonly #format: EventFormat;
  readonly #signal: AbortSignal;
  #local: SessionStream;
  #relayed: RelayedStream | undefined;
  #ended = false;
  #changed!: () => void;
  #change!: Promise<void>;
  /** Every local stream this route used, so that the end of the call detaches each. */
  readonly #streams: SessionStream[] = [];

  constructor(deps: StreamSessionDeps, principal: Principal, format: EventFormat, signal: AbortSignal, stream: SessionStream) {
    this.#deps = deps;
    this.#principal = principal;
    this.#format = format;
    this.#signal = signal;
    this.#local = stream;
    this.#streams.push(stream);
    deps.openStreams.add(stream);
    this.#nextChange();
  }

  /** The local stream (closed, with nothing more to write, while the session is relayed). */
  get local(): SessionStream {
    return this.#local;
  }

  get relayed(): RelayedStream | undefined {
    return this.#relayed;
  }

  #nextChange(): void {
    this.#change = new Promise((resolve) => {
      this.#changed = resolve;
    });
  }

  #moved(): void {
    const changed = this.#changed;
    this.#nextChange();
    changed();
  }

  /** From now on the session is served by `relayed`; the local stream ends after what it queued. */
  relayTo(relayed: RelayedStream): void {
    this.#relayed = relayed;
    this.#local.close();
    this.#moved();
  }

  /** The writer is done: requests still waiting for a move stop. */
  end(): void {
    this.#ended = true;
    this.#moved();
  }

  /**
   * Sends `request` where the session is now; one that could not be delivered (the relay was
   * just lost) waits for the route to move and goes there. "stop" once the stream has ended.
   */
  send(request: SessionRequest, applyLocally: ApplyLocally): StepResult {
    return this.#deliver(
      (relayed) => relayed.forward(toBinary(SessionRequestSchema, request)),
      (stream) => applyLocally(stream, request),
    );
  }

  /** The client half-closed. */
  async requestsEnded(): Promise<void> {
    await this.#deliver(
      (relayed) => relayed.requestsEnded(),
      (stream) => stream.requestsEnded().then(() => "stop" as const),
    );
  }

  /** Ends the stream with `error` (revoked credentials), wherever it is served. */
  async fail(error: RozError): Promise<void> {
    await this.#deliver(
      (relayed) => relayed.fail(error),
      (stream) => stream.fail(error).then(() => "stop" as const),
    );
  }

  /**
   * Served here (the usual case): applied directly, with no promise when the stream answers at
   * once. Relayed: forwarded, and tried again where the route moves when that fails.
   */
  #deliver(remote: (relayed: RelayedStream) => Promise<boolean>, local: (stream: SessionStream) => StepResult): StepResult {
    if (this.#ended) return "stop";
    const relayed = this.#relayed;
    if (relayed === undefined) return local(this.#local);
    return this.#forward(relayed, remote, local);
  }

  async #forward(
    relayed: RelayedStream,
    remote: (relayed: RelayedStream) => Promise<boolean>,
    local: (stream: SessionStream) => StepResult,
  ): Promise<"stop" | "continue"> {
    const change = this.#change;
    if (await remote(relayed)) return "continue";
    // Not delivered: the relay has ended, and the writer is moving the route (or ending it).
    if (this.#relayed === relayed && !this.#ended) await change;
    return this.#deliver(remote, local);
  }

  /** The client went away: every part of the route lets go. */
  transportBroken(): void {
    for (const stream of this.#streams) stream.transportBroken();
    this.#relayed?.transportBroken();
  }

  /** Detaches what the route opened (the call has ended). */
  release(): void {
    this.transportBroken();
    for (const stream of this.#streams) this.#deps.openStreams.delete(stream);
  }

  /**
   * Called by the writer when `from`'s responses failed with `error`: moves the route (true) or
   * says the stream must end with that error (false).
   */
  async relocate(from: RelayedStream, error: RozError): Promise<boolean> {
    const relay = this.#deps.relay;
    const within = this.#deps.relocateWithinMs;
    if (relay === undefined || within === undefined || error.reason !== "unavailable" || relay.shuttingDown || this.#signal.aborted) return false;
    const deadline = Date.now() + within;
    const { sessionId, lastSeq } = from;
    while (Date.now() < deadline && !this.#signal.aborted && !relay.shuttingDown) {
      try {
        const located = await this.#deps.directory.find(this.#principal, sessionId);
        if (located.kind === "remote") {
          this.#relayed = await relay.open(located.nodeId, this.#principal, sessionId, lastSeq, this.#format);
        } else {
          // Live here now (adopted from the lost owner) or ended: resumed like any re-attach.
          const stream = new SessionStream(this.#deps.session, this.#deps.registry, this.#deps.directory, this.#principal);
          this.#streams.push(stream);
          this.#deps.openStreams.add(stream);
          this.#local = stream;
          this.#relayed = undefined;
          void stream.resume(sessionId, lastSeq);
        }
        this.#moved();
        return true;
      } catch (err) {
        // Not retryable (not found, another tenant's): the client gets that instead.
        if (toRozError(err).reason !== "unavailable") return false;
      }
      await new Promise((resolve) => setTimeout(resolve, RELOCATE_RETRY_MS));
    }
    return false;
  }
}
