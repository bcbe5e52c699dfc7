import { CallAnswers } from "./calls.ts";
import { RozError } from "./errors.ts";
import { type EventOf, eventOf, type SessionEvent } from "./events.ts";
import { Feed } from "./feed.ts";
import { newId } from "./ids.ts";
import { SessionKeeper } from "./keeper.ts";
import type { Link, Target } from "./link.ts";
import type { ApprovalDecision, OnApproval, SendOptions, SessionStatus, StartSessionOptions, Tools, TurnResult } from "./options.ts";
import { type Request, userMessage } from "./requests.ts";
import { Turn } from "./turn.ts";
import { TurnRouter } from "./turns.ts";

export interface SessionInit {
  target: Target;
  open: (target: Target, sessionId: () => string) => Link;
  /** True when a sent request is accepted on return (SendToSession), false when only written (bidi). */
  acknowledged: boolean;
  tools: Tools | undefined;
  onApproval: OnApproval | undefined;
  reconnectTimeoutMs: number;
  keepEvents: number;
  startSession: (options: StartSessionOptions) => Promise<Session>;
}

type StatusListener = (status: SessionStatus, error?: RozError) => void;

/** Rollback refusals come without a request id (session-behaviour.md §11). */
const rollbackRefusals = new Set(["turn_in_progress", "invalid_argument", "internal", "session_ended"]);

/**
 * One session as this client holds it. It stays attached across transport breaks (re-attaching
 * from its last seq), runs its tools and answers its approvals once per call, and hands out
 * every event exactly once and in order: on `events` and on the `Turn` of each message.
 */
export class Session {
  readonly #keeper: SessionKeeper;
  readonly #answers: CallAnswers;
  readonly #turns = new TurnRouter();
  readonly #events: Feed<SessionEvent>;
  readonly #listeners = new Set<StatusListener>();
  readonly #waiters = new Set<(ev: SessionEvent) => void>();
  readonly #init: SessionInit;
  #model = "";
  #error: RozError | undefined;
  /** Resolves once the session is caught up the first time (or ended), rejects if it failed first. */
  readonly ready: Promise<void>;
  /** Settles when this client let go of the session: it ended, was detached, or the link failed for good. */
  readonly closed: Promise<void>;

  constructor(init: SessionInit) {
    this.#init = init;
    this.#events = new Feed(init.keepEvents);
    let ready!: () => void;
    let notReady!: (err: RozError) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      ready = resolve;
      notReady = reject;
    });
    this.ready.catch(() => undefined);
    this.#answers = new CallAnswers({
      tools: init.tools,
      onApproval: init.onApproval,
      send: (request) => this.#keeper.send(request),
      generation: () => this.#keeper.generation,
    });
    this.#keeper = new SessionKeeper({
      target: init.target,
      reconnectTimeoutMs: init.reconnectTimeoutMs,
      open: (target) => init.open(target, () => this.#keeper.sessionId),
      handlers: {
        response: (r) => {
          const ev = eventOf(r);
          if (ev) this.#event(ev);
        },
        resent: (r) => {
          const ev = eventOf(r);
          if (ev) this.#answers.resent(ev);
        },
        caughtUp: (generation) => {
          ready();
          this.#answers.caughtUp();
          for (const [, m] of this.#turns.unconfirmed) if (m.generation < generation) m.resend();
        },
        status: (status, error) => {
          if (status === "reconnecting") this.#answers.broken();
          if (status === "ended" || status === "detached" || status === "failed") this.#stop(status, error, ready, notReady);
          for (const l of this.#listeners) l(status, error);
        },
      },
    });
    this.closed = this.#keeper.stopped;
  }

  /** The session's id (a UUID). */
  get id(): string {
    return this.#keeper.sessionId;
  }
  /** The seq of the last event this client delivered: where a re-attach goes on from. */
  get lastSeq(): number {
    return this.#keeper.lastSeq;
  }
  get status(): SessionStatus {
    return this.#keeper.status;
  }
  /** The model the server resolved (from `session_started`; empty for a session attached after it). */
  get model(): string {
    return this.#model;
  }
  /** Why the session's link failed for good (status `failed`). */
  get error(): RozError | undefined {
    return this.#error;
  }
  /** Every event of the session, with its seq, once each: each reader starts with the events kept so far (`keepEvents`). */
  get events(): AsyncIterable<SessionEvent> {
    return this.#events;
  }
  /** Tool calls and approvals the session waits for now. */
  pending() {
    return this.#answers.pending();
  }

  /** Calls `listener` on every status change; returns the unsubscribe function. */
  onStatus(listener: StatusListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Sends a message; while a turn runs it is queued unless `delivery` says `steer` or `interrupt`. */
  send(text: string, options: SendOptions = {}): Turn {
    const turn = new Turn(options.messageId ?? newId());
    const request = userMessage(text, turn.messageId, options);
    this.#turns.add(turn);
    const send = (): void => {
      void this.#keeper.send(request).then(
        (generation) => {
          const m = this.#turns.unconfirmed.get(turn.messageId);
          if (this.#init.acknowledged) this.#turns.unconfirmed.delete(turn.messageId);
          else if (m) m.generation = generation;
        },
        (err: unknown) => {
          this.#turns.unconfirmed.delete(turn.messageId);
          turn.fail(err instanceof RozError ? err : new RozError("unavailable", String(err), { retryable: true }));
        },
      );
    };
    this.#turns.unconfirmed.set(turn.messageId, { generation: Number.POSITIVE_INFINITY, resend: send });
    send();
    return turn;
  }

  /** `send`, then the turn's result. */
  run(text: string, options?: SendOptions): Promise<TurnResult> {
    return this.send(text, options).done;
  }

  /** Cancels the running turn (`clearQueue`: also drops every queued message). */
  async cancelTurn(options: { reason?: string; clearQueue?: boolean } = {}): Promise<void> {
    await this.request({ case: "cancelTurn", value: { reason: options.reason ?? "cancelled by the client", clearQueue: options.clearQueue ?? false } });
  }

  /** Hides the last `turns` completed turns from the model; resolves with the server's answer. */
  async rollback(turns = 1): Promise<{ turns: number; remainingTurns: number }> {
    const answer = this.#next((ev) => ev.type === "rolled_back" || (ev.type === "error" && ev.requestId === "" && rollbackRefusals.has(ev.code)));
    await this.request({ case: "rollback", value: { turns } });
    const ev = (await answer) as EventOf<"rolled_back" | "error">;
    if (ev.type === "error") throw new RozError(ev.code, ev.message, { retryable: ev.retryable });
    return { turns: ev.turns, remainingTurns: ev.remainingTurns };
  }

  /** A new session with this one's conversation through `throughTurn` (default: every completed turn). */
  fork(options: Omit<StartSessionOptions, "fork" | "environmentId" | "model" | "history"> & { throughTurn?: number } = {}): Promise<Session> {
    const { throughTurn, ...rest } = options;
    return this.#init.startSession({ ...rest, fork: { sessionId: this.id, ...(throughTurn !== undefined ? { throughTurn } : {}) } });
  }

  /** Decides an approval yourself (without `onApproval`, or before it answers). */
  decide(toolCallId: string, decision: ApprovalDecision): Promise<void> {
    return this.#answers.decide(toolCallId, decision);
  }

  /** Sends any request of the protocol (`registerTools`, `feedback`, …) as it is. */
  async request(request: Request): Promise<void> {
    await this.#keeper.send(request);
  }

  /** Lets go of the session and leaves it running on the server (it waits there for a re-attach). */
  detach(): void {
    this.#keeper.detach();
  }

  /** Ends the session (`cancel_session`) and resolves once the server ended its stream. */
  async close(reason = "closed by the client"): Promise<void> {
    if (this.status === "ended" || this.status === "failed" || this.status === "detached") return;
    this.#keeper.expectEnd();
    await this.#keeper.send({ case: "cancelSession", value: { reason } }).catch(() => undefined);
    const timer = setTimeout(() => this.#keeper.detach(), 10_000);
    await this.#keeper.stopped;
    clearTimeout(timer);
  }

  #event(ev: SessionEvent): void {
    if (ev.type === "session_started") this.#model = ev.model;
    this.#answers.event(ev);
    this.#turns.event(ev);
    this.#events.push(ev);
    for (const w of this.#waiters) w(ev);
  }

  /** The next event that `match`es (or the session's end). */
  #next(match: (ev: SessionEvent) => boolean): Promise<SessionEvent> {
    return new Promise((resolve, reject) => {
      const waiter = (ev: SessionEvent): void => {
        if (!match(ev)) return;
        this.#waiters.delete(waiter);
        resolve(ev);
      };
      this.#waiters.add(waiter);
      void this.closed.then(() => {
        if (this.#waiters.delete(waiter)) reject(this.#error ?? new RozError("session_ended", "the session ended"));
      });
    });
  }

  #stop(status: SessionStatus, error: RozError | undefined, ready: () => void, notReady: (err: RozError) => void): void {
    this.#error = error;
    const reason = error ?? new RozError(status === "detached" ? "closed" : "session_ended", `the session is ${status} here`);
    if (status === "failed") notReady(reason);
    else ready();
    this.#turns.endAll(reason);
    this.#events.end(status === "failed" ? error : undefined);
  }
}
