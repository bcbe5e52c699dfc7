import { Backoff, sleep } from "./backoff.ts";
import { type InBandError, RozError, toRozError } from "./errors.ts";
import type { SessionResponse } from "./gen/roz/v1/agent_pb.js";
import type { Link, Target } from "./link.ts";
import type { SessionStatus } from "./options.ts";
import type { Request } from "./requests.ts";

/** What the keeper hands on, in the session's order. */
export interface KeeperHandlers {
  /** A response with a seq above every one delivered before: each exactly once, in order. */
  response(response: SessionResponse): void;
  /** A tool or approval request the server sent again on re-attach (delivered before, still open). */
  resent(response: SessionResponse): void;
  /** Everything the session had when this link opened has arrived; `generation` counts links. */
  caughtUp(generation: number): void;
  status(status: SessionStatus, error?: RozError): void;
}

/** A pair link asks for its caught-up pong until it comes: its stream may not be attached yet when the first ping arrives. */
const PROBE_EVERY_MS = 250;

/**
 * Keeps one session's link (session-behaviour.md §6): opens it, drops every response it has
 * delivered already, and after a break re-attaches from the last delivered seq, with backoff
 * and jitter, until `reconnectTimeoutMs` has passed without a working link. Requests sent
 * while no link is up wait and go out, in order, on the next one.
 */
export class SessionKeeper {
  readonly #open: (target: Target) => Link;
  readonly #handlers: KeeperHandlers;
  readonly #reconnectTimeoutMs: number;
  readonly #stop = new AbortController();
  #sessionId = "";
  #lastSeq = 0;
  #link: Link | undefined;
  #generation = 0;
  #outbox: { request: Request; resolve: (generation: number) => void; reject: (err: unknown) => void }[] = [];
  #ending: "detached" | "ended" | undefined;
  #status: SessionStatus = "connecting";
  #over = false;
  /** Settles when the keeper stopped: the session ended, was detached, or failed. */
  readonly stopped: Promise<void>;

  constructor(init: { open: (target: Target) => Link; handlers: KeeperHandlers; reconnectTimeoutMs: number; target: Target }) {
    this.#open = init.open;
    this.#handlers = init.handlers;
    this.#reconnectTimeoutMs = init.reconnectTimeoutMs;
    if ("sessionId" in init.target) {
      this.#sessionId = init.target.sessionId;
      this.#lastSeq = init.target.afterSeq;
    }
    this.stopped = this.#run(init.target);
  }

  get sessionId(): string {
    return this.#sessionId;
  }
  get lastSeq(): number {
    return this.#lastSeq;
  }
  get generation(): number {
    return this.#generation;
  }
  get status(): SessionStatus {
    return this.#status;
  }

  /**
   * Sends `request` on the current link, or on the next one when none is up; resolves with the
   * generation of the link it went out on. A call that failed on the way (SendToSession) is
   * tried again until `reconnectTimeoutMs`; it rejects only with a refusal or when the keeper stops.
   */
  send(request: Request, since = Date.now()): Promise<number> {
    if (this.#ending === "detached" || this.#over) return Promise.reject(new RozError("session_ended", "the session is closed or detached here"));
    const link = this.#link;
    if (!link || !this.#sessionId) return new Promise((resolve, reject) => this.#outbox.push({ request, resolve, reject }));
    const generation = this.#generation;
    return link.send(request).then(
      () => generation,
      async (err: unknown) => {
        const error = toRozError(err);
        if (!error.retryable || Date.now() - since > this.#reconnectTimeoutMs) throw error;
        await sleep(250 + Math.random() * 250, this.#stop.signal);
        return this.send(request, since);
      },
    );
  }

  /** Leaves the session running: the link is cut without a half-close. */
  detach(): void {
    if (this.#over) return;
    this.#ending ??= "detached";
    this.#stop.abort();
    this.#link?.abort();
    this.#end("detached");
  }

  /** The session's end was asked for: the stream's end that follows is not a break. */
  expectEnd(): void {
    this.#ending ??= "ended";
  }

  #setStatus(status: SessionStatus, error?: RozError): void {
    if (this.#status === status && error === undefined) return;
    this.#status = status;
    this.#handlers.status(status, error);
  }

  #flush(): void {
    const waiting = this.#outbox;
    this.#outbox = [];
    for (const w of waiting) this.send(w.request).then(w.resolve, w.reject);
  }

  async #run(first: Target): Promise<void> {
    const backoff = new Backoff();
    let target = first;
    let brokenSince: number | undefined;
    for (;;) {
      const outcome = await this.#attach(target);
      if (this.#over) return;
      if (outcome.kind === "live") {
        backoff.reset();
        brokenSince = undefined;
      }
      if (outcome.kind === "ended") return this.#end(this.#ending === "detached" ? "detached" : "ended");
      if (outcome.kind === "failed" && !outcome.error.retryable) return this.#end("failed", outcome.error);
      if (this.#stop.signal.aborted) return this.#end("detached");
      if (!this.#sessionId)
        return this.#end("failed", outcome.kind === "failed" ? outcome.error : new RozError("unavailable", "the stream broke before the session started"));
      brokenSince ??= Date.now();
      if (Date.now() - brokenSince > this.#reconnectTimeoutMs) {
        const cause = outcome.kind === "failed" ? outcome.error : undefined;
        return this.#end("failed", new RozError("reconnect_timeout", `no working connection for ${this.#reconnectTimeoutMs} ms`, { retryable: true, cause }));
      }
      this.#setStatus("reconnecting", outcome.kind === "failed" ? outcome.error : undefined);
      await sleep(backoff.next(), this.#stop.signal);
      target = { sessionId: this.#sessionId, afterSeq: this.#lastSeq };
    }
  }

  #end(status: SessionStatus, error?: RozError): void {
    this.#link = undefined;
    this.#over = true;
    const failure = error ?? new RozError(status === "detached" ? "closed" : "session_ended", `the session is ${status} here`);
    for (const w of this.#outbox) w.reject(failure);
    this.#outbox = [];
    this.#setStatus(status, error);
  }

  /** One link, read to its end: `ended` (OK), `live` then broken, or `failed` before or while live. */
  async #attach(target: Target): Promise<{ kind: "ended" | "live" } | { kind: "failed"; error: RozError }> {
    const generation = ++this.#generation;
    const link = this.#open(target);
    this.#link = link;
    const resuming = "sessionId" in target;
    let caughtUp = false;
    let live = false;
    let inBand: InBandError | undefined;
    let probe: ReturnType<typeof setInterval> | undefined;
    if (resuming) {
      if (this.#sessionId) this.#flush();
      link.probe();
      probe = setInterval(() => link.probe(), PROBE_EVERY_MS);
    }
    const markCaughtUp = (): void => {
      clearInterval(probe);
      if (caughtUp) return;
      caughtUp = true;
      this.#setStatus("live");
      this.#handlers.caughtUp(generation);
    };
    try {
      for await (const r of link.responses) {
        live = true;
        const kind = r.response.case;
        if (kind === "pong") markCaughtUp();
        if (kind === "pong" || kind === "keepalive") continue;
        if (kind === "error") inBand = { ...r.response.value };
        const seq = Number(r.seq);
        if (seq === 0) continue; // stream-local (an error before the session was attached)
        if (seq <= this.#lastSeq) {
          if (kind === "toolRequest" || (kind === "activityUpdate" && r.response.value.state === "waiting_approval")) this.#handlers.resent(r);
          continue;
        }
        this.#lastSeq = seq;
        if (kind === "sessionStarted") {
          this.#sessionId = r.response.value.sessionId;
          this.#flush();
        }
        this.#handlers.response(r);
        if (kind === "sessionStarted" && !resuming) markCaughtUp();
      }
      return { kind: "ended" };
    } catch (err) {
      if (this.#stop.signal.aborted) return { kind: "ended" };
      return live && toRozError(err, inBand).retryable ? { kind: "live" } : { kind: "failed", error: toRozError(err, inBand) };
    } finally {
      clearInterval(probe);
      if (this.#link === link) this.#link = undefined;
      link.abort();
    }
  }
}
