import { AsyncQueue } from "../domain/index.ts";
import { RozError, toRozError } from "../errors/index.ts";
import { inBandError, sessionErrorOf } from "./error-codes.ts";
import type { Attachment } from "./fan-out.ts";
import { openSession, skippedHistoryMessage } from "./open-session.ts";
import type { Principal, SessionDeps } from "./ports.ts";
import { replayStored } from "./replay.ts";
import { ReplayingAttachment } from "./replaying-attachment.ts";
import type { Session } from "./session.ts";
import type { SessionDirectory } from "./session-directory.ts";
import type { SessionRegistry } from "./session-registry.ts";
import type { LoggedEvent, OutgoingEvent, SessionCommand, SessionErrorCode, SessionEvent, StartCommand } from "./types.ts";

/** What a stream yields: numbered responses, then possibly a fatal error that ends the RPC. */
export type StreamItem = { kind: "event"; item: OutgoingEvent } | { kind: "fatal"; error: RozError };

/**
 * One stream of a session (a StreamSession call or an AttachSession call), session-behaviour.md
 * §1–§2 and §6: requests in, ordered items out through `output`. Before it is attached,
 * stream-local answers (pong, errors) carry sequence 0; once attached (by `start` or
 * `resume`), it writes every response of its session from its `after_seq` on.
 */
export class SessionStream {
  readonly output: AsyncIterable<StreamItem>;
  readonly #queue = new AsyncQueue<StreamItem>();
  readonly #deps: SessionDeps;
  readonly #registry: SessionRegistry;
  readonly #directory: SessionDirectory;
  readonly #principal: Principal;
  #session: Session | undefined;
  #attachment: Attachment | undefined;
  /** Set while attaching: a `start` or `resume` is being handled. */
  #attaching = false;
  #keepalive: NodeJS.Timeout | undefined;
  #startTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(deps: SessionDeps, registry: SessionRegistry, directory: SessionDirectory, principal: Principal) {
    this.#deps = deps;
    this.#registry = registry;
    this.#directory = directory;
    this.#principal = principal;
    this.output = this.#queue;
    this.#keepalive = setInterval(() => this.#sendKeepalive(), deps.keepaliveIntervalMs);
    const startTimeoutMs = deps.startTimeoutMs;
    if (startTimeoutMs !== undefined && startTimeoutMs > 0) {
      // An authenticated stream that never starts (or resumes) a session must not be held (and counted) forever.
      this.#startTimer = setTimeout(() => {
        this.#startTimer = undefined;
        if (!this.#session && !this.#attaching) void this.fail(new RozError("invalid_argument", `no start within ${startTimeoutMs} ms`));
      }, startTimeoutMs);
    }
  }

  /** The session this stream is attached to, if any. */
  get session(): Session | undefined {
    return this.#session;
  }

  /** Handles one client message. The caller awaits each before reading the next. */
  handle(command: SessionCommand): Promise<void> | void {
    if (this.#closed) return;
    const session = this.#session;
    if (session) return session.handle(command, this.#attachment);
    if (command.type === "ping") return this.#sendLocal({ type: "pong" });
    return this.#handleUnattached(command);
  }

  async #handleUnattached(command: Exclude<SessionCommand, { type: "ping" }>): Promise<void> {
    if (this.#refusedBeforeStart(command.type)) return;
    if (command.type === "start") return this.start(command);
    if (command.type === "resume") return this.resume(command.sessionId, command.afterSeq ?? 0);
    if (command.type === "cancel_session") return this.close();
    // §1: everything else is ignored before start
  }

  /**
   * The answers of §1 that a request's kind alone decides, for decoded and undecodable
   * requests alike, before the stream is attached: `no_session` for what needs a session.
   * True when the request was answered so.
   */
  #refusedBeforeStart(type: SessionCommand["type"]): boolean {
    if (type !== "user_message" && type !== "tool_result" && type !== "register_tools") return false;
    this.#error("no_session", `send start before ${type}`);
    return true;
  }

  /** Opens a new session and attaches this stream to it; refusals are fatal (§1). */
  async start(command: StartCommand): Promise<void> {
    if (this.#attaching) return;
    this.#attaching = true;
    this.#clearStartTimer();
    try {
      const session = await openSession(this.#deps, this.#registry, this.#principal, command);
      const attachment = this.#liveAttachment(session);
      session.attach(attachment);
      this.#session = session;
      this.#attachment = attachment;
      session.emit({ type: "session_started", sessionId: session.id, model: session.model, permissions: session.agent.permissions });
      if (command.skipped.length > 0) this.#error("invalid_argument", skippedHistoryMessage(command.skipped));
      // The transport broke while the session was being created: it detaches like any other.
      if (this.#closed) this.transportBroken();
    } catch (err) {
      const error = toRozError(err);
      if (error.reason === "internal") this.#deps.log.error({ err }, "session start failed");
      await this.fail(error);
    } finally {
      this.#attaching = false;
    }
  }

  /**
   * Re-attaches this stream to an existing session of the caller's tenant (§6): the still-open
   * tool and approval requests again, then every kept response after `afterSeq` in order,
   * then live ones, with no gap and no duplicate at the seam. An ended session's remaining
   * events are replayed and the stream ends OK. Failures are fatal: `not_found`,
   * `invalid_argument` (after_seq in the future), `events_expired` (no longer kept).
   */
  async resume(sessionId: string, afterSeq: number): Promise<void> {
    if (this.#attaching) return;
    this.#attaching = true;
    this.#clearStartTimer();
    try {
      const located = await this.#directory.findHere(this.#principal, sessionId);
      if (located.kind === "ended") {
        if (afterSeq > located.lastSeq) {
          throw new RozError("invalid_argument", `after_seq ${afterSeq} is beyond the session's last seq ${located.lastSeq}`);
        }
        await this.#replayStored(sessionId, afterSeq, Number.POSITIVE_INFINITY);
        this.close();
        return;
      }
      await this.#attachTo(located.session, afterSeq);
    } catch (err) {
      await this.fail(toRozError(err));
    } finally {
      this.#attaching = false;
    }
  }

  /** An attachment whose events go straight to the output. */
  #liveAttachment(session: Session): Attachment {
    return {
      deliver: (item) => this.#queue.push({ kind: "event", item }),
      ended: () => this.#endedElsewhere(session),
    };
  }

  async #attachTo(session: Session, afterSeq: number): Promise<void> {
    const attachment = new ReplayingAttachment(
      (item) => this.#queue.push({ kind: "event", item }),
      () => this.#endedElsewhere(session),
    );
    const plan = session.attach(attachment, afterSeq);
    this.#session = session;
    this.#attachment = attachment;
    try {
      for (const e of plan.resent) this.#push(e);
      if (plan.stored) await this.#replayStored(session.id, plan.stored.afterSeq, plan.stored.beforeSeq);
      for (const e of plan.memory) this.#push(e);
    } catch (err) {
      // A failed replay leaves the session as it was: this stream was never really attached.
      attachment.drop();
      this.#unbind();
      void session.detach(attachment, "broken");
      throw err;
    }
    attachment.live();
    if (this.#closed) this.transportBroken();
  }

  /** Replays stored events in `(afterSeq, beforeSeq)` to the output (see `replayStored`). */
  #replayStored(sessionId: string, afterSeq: number, beforeSeq: number): Promise<void> {
    const push = (e: LoggedEvent): void => this.#push(e);
    return replayStored(this.#deps.persistence, this.#principal.tenantId, sessionId, { afterSeq, beforeSeq }, push, () => this.#closed);
  }

  #push(e: LoggedEvent): void {
    this.#queue.push({ kind: "event", item: e });
  }

  /**
   * A request of kind `type` that could not be decoded (a start that failed to decode goes
   * to `fail`). What it is decides the answer first, as for a decoded one (§1): before
   * start, `no_session` or nothing; a second start, `already_started`. Otherwise the
   * decoding error is reported in-band and the stream goes on.
   */
  rejectRequest(error: RozError, type: SessionCommand["type"]): void {
    if (this.#closed) return;
    const session = this.#session;
    if (!session) {
      this.#refusedBeforeStart(type);
      return;
    }
    if (type === "start") return this.#error("already_started", "the session has already started");
    const { code, message } = sessionErrorOf(error);
    this.#error(code, message);
  }

  /**
   * A fatal stream error (malformed bytes, size limit, a refused start or resume): report it
   * and end the stream. The session ends with it as `error` when no other stream is attached.
   */
  async fail(error: RozError): Promise<void> {
    if (this.#closed) return;
    this.#deps.metrics.error(error.reason);
    this.#send({ type: "session_error", ...sessionErrorOf(error) });
    this.#queue.push({ kind: "fatal", error });
    const bound = this.#unbind();
    this.close();
    if (!bound) return;
    if (bound.session.attachedStreams <= 1) await this.#registry.end(bound.session, "error", error.message);
    else await bound.session.detach(bound.attachment, "broken");
  }

  /**
   * The client half-closed: the stream detaches; when it was the last one attached, the
   * running turn may finish (cancelled if it needs the client's answers, which can no
   * longer come) and the session completes (§6).
   */
  async requestsEnded(): Promise<void> {
    const session = this.#session;
    const attachment = this.#attachment;
    if (session && attachment) await session.detach(attachment, "closed");
    this.#unbind();
    this.close();
  }

  /** The transport broke without a half-close: this stream detaches; the session stays resumable. */
  transportBroken(): void {
    const bound = this.#unbind();
    if (bound) void bound.session.detach(bound.attachment, "broken");
    this.close();
  }

  /** Ends the stream with a retryable UNAVAILABLE because the server is shutting down. */
  shutdown(): void {
    if (!this.#closed) this.#queue.push({ kind: "fatal", error: new RozError("shutting_down") });
    this.transportBroken();
  }

  /** The session ended (cancel_session from any client, REST DELETE, expiry): the stream ends with it. */
  #endedElsewhere(session: Session): void {
    if (this.#session === session) this.#unbind();
    this.close();
  }

  /** Forgets the session this stream is attached to; returns it with the attachment, for detaching. */
  #unbind(): { session: Session; attachment: Attachment } | undefined {
    const session = this.#session;
    const attachment = this.#attachment;
    this.#session = undefined;
    this.#attachment = undefined;
    return session && attachment ? { session, attachment } : undefined;
  }

  /** Stops the keepalive and ends the output after what is queued. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearStartTimer();
    if (this.#keepalive) clearInterval(this.#keepalive);
    this.#keepalive = undefined;
    this.#queue.end();
  }

  #clearStartTimer(): void {
    if (this.#startTimer) clearTimeout(this.#startTimer);
    this.#startTimer = undefined;
  }

  #sendKeepalive(): void {
    const session = this.#session;
    // Before start the counts are those of an empty session with the default window.
    if (!session) return this.#sendLocal({ type: "keepalive", tokensUsed: 0, tokensMax: this.#deps.defaultMaxContextTokens });
    session.emitLocal({ type: "keepalive", tokensUsed: session.agent.contextTokens(), tokensMax: session.agent.maxContextTokens }, this.#attachment);
  }

  /** A non-fatal in-band error; its `retryable` flag is the §8 table's. */
  #error(code: SessionErrorCode, message: string): void {
    this.#deps.metrics.error(code);
    this.#send(inBandError(code, message));
  }

  /** Errors go through the session (numbered, to every attached stream) once attached. */
  #send(event: SessionEvent): void {
    if (this.#session) this.#session.emit(event);
    else this.#sendLocal(event);
  }

  #sendLocal(event: SessionEvent): void {
    this.#queue.push({ kind: "event", item: { seq: 0, event } });
  }
}
