import type { Agent, Delivery, ToolOutcome, TurnInput } from "../agent/index.ts";
import { addUsage, emptyUsage, type JsonObject, type TokenUsage } from "../models/index.ts";
import type { ClientAnswerRoute, Principal, SessionDeps, SessionExtension, SessionStatus } from "./ports.ts";
import type { SequencedEvent, SessionEvent } from "./types.ts";

/** Merged deltas are flushed at this many characters even within one tick. */
const MAX_MERGED_DELTA = 16_384;

/** Receives a session's events in order; set while a stream is attached. */
export type EventSink = (event: SequencedEvent) => void;

/**
 * One started session: its agent, its sequence counter and its status. It owns its
 * lifetime (not the RPC's): a turn keeps running while the stream is detached.
 *
 * Events are numbered here, so the order clients see is the order they were produced.
 * A turn's events are persisted together with the turn record before `turn_complete`
 * is delivered: a client that saw `turn_complete` can rely on the turn being stored.
 */
export class Session {
  readonly id: string;
  readonly principal: Principal;
  readonly model: string;
  readonly agent: Agent;
  #deps: SessionDeps;
  #seq = 0;
  #unflushed: SequencedEvent[] = [];
  /** The delta being merged (see `emit`). */
  #pendingDelta: Extract<SessionEvent, { type: "text_delta" | "thinking_delta" }> | undefined;
  #flushScheduled = false;
  /** Events produced while a turn is being stored: delivered (and numbered) after its turn_complete. */
  #held: SessionEvent[] | undefined;
  #sink: EventSink | undefined;
  #onEnded: (() => void) | undefined;
  #ending: Promise<void> | undefined;
  #status: SessionStatus = "active";
  #turn: Promise<void> | undefined;
  #detachTimer: NodeJS.Timeout | undefined;
  /** The running turn waits for the client: a tool result or a permission decision. */
  #awaitingClient = false;
  /** The client half-closed: nothing it could answer will come any more. */
  #inputClosed = false;
  /** Turns started so far; the running one's index while `#turnIndex` is set. */
  #turns = 0;
  #turnIndex: number | undefined;
  /** Usage of every turn so far, reported when the session ends. */
  #usage: TokenUsage = emptyUsage();
  readonly #extension: SessionExtension | undefined;
  /** Client answers for ids that are not the agent's own (workers' calls). */
  readonly #routes = new Map<string, ClientAnswerRoute>();

  constructor(init: { id: string; principal: Principal; model: string; agent: Agent; deps: SessionDeps; extension?: SessionExtension }) {
    this.id = init.id;
    this.principal = init.principal;
    this.model = init.model;
    this.agent = init.agent;
    this.#deps = init.deps;
    this.#extension = init.extension;
    this.#deps.metrics.sessionStatus("active", 1);
  }

  get status(): SessionStatus {
    return this.#status;
  }

  get turnRunning(): boolean {
    return this.#turn !== undefined;
  }

  /** Resolves when the running turn (if any) has ended. */
  async idle(): Promise<void> {
    await this.#turn;
  }

  /**
   * Numbers the event, keeps it for persistence and hands it to the attached stream.
   * Consecutive deltas of one kind and message are merged until the next tick (or the
   * next other event): a provider's burst becomes one message, not one per token.
   */
  emit(event: SessionEvent): void {
    if (event.type === "text_delta" || event.type === "thinking_delta") {
      const pending = this.#pendingDelta;
      if (pending?.type === event.type && pending.messageId === event.messageId && pending.text.length < MAX_MERGED_DELTA) {
        pending.text += event.text;
        return;
      }
      this.#flushDelta();
      this.#pendingDelta = { ...event };
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        setImmediate(() => {
          this.#flushScheduled = false;
          this.#flushDelta();
        });
      }
      return;
    }
    this.#flushDelta();
    this.#number(event);
  }

  #flushDelta(): void {
    const pending = this.#pendingDelta;
    if (pending === undefined) return;
    this.#pendingDelta = undefined;
    this.#number(pending);
  }

  #number(event: SessionEvent): void {
    if (this.#held) {
      this.#held.push(event);
      return;
    }
    const sequenced = this.#sequenced(++this.#seq, event);
    // Pongs and keepalives belong to one stream: numbered, but never replayed.
    if (event.type !== "pong" && event.type !== "keepalive") this.#unflushed.push(sequenced);
    this.#deliver(sequenced);
  }

  #sequenced(seq: number, event: SessionEvent): SequencedEvent {
    const turn = this.#turnIndex !== undefined ? { turnIndex: this.#turnIndex } : {};
    return { seq, event, sessionId: this.id, at: Date.now(), ...turn };
  }

  #deliver(sequenced: SequencedEvent): void {
    const { event } = sequenced;
    this.#sink?.(sequenced);
    this.#trackClientWait(event);
  }

  /**
   * The client half-closed its request stream. A running turn may still finish, but one
   * that waits (or comes to wait) for a tool result or a decision could only hang until its
   * timeouts: it is cancelled instead, so that it ends with `turn_complete{cancelled}`.
   */
  closeInput(): void {
    this.#inputClosed = true;
    this.#cancelIfUnanswerable();
  }

  #trackClientWait(event: SessionEvent): void {
    if (event.type === "tool_request" || (event.type === "activity" && event.state === "waiting_approval")) this.#awaitingClient = true;
    else if (event.type === "turn_complete" || (event.type === "activity" && (event.state === "thinking" || event.state === "idle"))) {
      this.#awaitingClient = false;
    }
    this.#cancelIfUnanswerable();
  }

  #cancelIfUnanswerable(): void {
    if (this.#inputClosed && this.#awaitingClient) this.agent.cancelTurn("the client closed its request stream");
  }

  /** Sends the client's answers for `toolCallId` to `route` (not the agent) until the returned function runs. */
  route(toolCallId: string, route: ClientAnswerRoute): () => void {
    this.#routes.set(toolCallId, route);
    return () => {
      if (this.#routes.get(toolCallId) === route) this.#routes.delete(toolCallId);
    };
  }

  /** A client's tool result: for the agent's own call, else for a routed one. */
  submitToolResult(toolCallId: string, outcome: ToolOutcome): Delivery {
    const delivery = this.agent.submitToolResult(toolCallId, outcome);
    if (delivery === "accepted") return delivery;
    return this.#routes.get(toolCallId)?.result(outcome) === true ? "accepted" : delivery;
  }

  /** A client's permission decision: for the agent's own call, else for a routed one. */
  decidePermission(toolCallId: string, approved: boolean, modifier?: JsonObject): Delivery {
    const delivery = this.agent.decidePermission(toolCallId, approved, modifier);
    if (delivery === "accepted") return delivery;
    return this.#routes.get(toolCallId)?.decide(approved) === true ? "accepted" : delivery;
  }

  /** `onEnded` runs when the session ends from elsewhere (REST DELETE, shutdown), to close the stream. */
  attach(sink: EventSink, onEnded?: () => void): void {
    if (this.#detachTimer) clearTimeout(this.#detachTimer);
    this.#detachTimer = undefined;
    this.#sink = sink;
    this.#onEnded = onEnded;
    if (this.#status === "detached") this.#setStatus("active");
  }

  /** The transport broke: keep the session (and its turn) for the grace period. */
  detach(onExpired: () => void): void {
    this.#sink = undefined;
    this.#onEnded = undefined;
    if (this.#status !== "active") return;
    this.#setStatus("detached");
    this.#detachTimer = setTimeout(() => {
      this.#detachTimer = undefined;
      onExpired();
    }, this.#deps.detachGraceMs);
    this.#detachTimer.unref();
  }

  /** Starts a turn; the caller checked that none is running. */
  startTurn(input: TurnInput): void {
    this.#turnIndex = ++this.#turns;
    const run = this.#runTurn(input).finally(() => {
      this.#turn = undefined;
      this.#turnIndex = undefined;
    });
    this.#turn = run;
  }

  async #runTurn(input: TurnInput): Promise<void> {
    try {
      for await (const event of this.agent.runTurn(input)) {
        if (event.type === "error") this.#deps.metrics.error(event.code);
        if (event.type === "turn_complete") await this.#completeTurn(event);
        else this.emit(event);
      }
    } catch (err) {
      // The agent guarantees a turn_complete; reaching here is a bug worth a log line.
      this.#deps.log.error({ err, sessionId: this.id }, "turn failed outside the agent loop");
      this.emit({ type: "session_error", code: "internal", message: "internal error", retryable: true });
    }
  }

  /**
   * Stores the turn with every event since the last flush, its own turn_complete included,
   * in one write; only then is turn_complete delivered. Events produced meanwhile (pongs,
   * keepalives) wait, so numbers stay in delivery order. When the store fails, the client
   * gets a retryable `internal` error before turn_complete, and the events stay queued
   * for the next write.
   */
  async #completeTurn(event: Extract<SessionEvent, { type: "turn_complete" }>): Promise<void> {
    this.#flushDelta();
    this.#usage = addUsage(this.#usage, event.usage);
    const completed = this.#sequenced(this.#seq + 1, event);
    const batch = [...this.#unflushed, completed];
    this.#held = [];
    let stored = false;
    try {
      await this.#deps.persistence.appendTurn(this.principal.tenantId, this.id, event.record, batch);
      stored = true;
    } catch (err) {
      this.#deps.log.error({ err, sessionId: this.id }, "could not persist turn");
      this.#deps.metrics.error("store");
    }
    const held = this.#held;
    this.#held = undefined;
    this.#deps.metrics.turnCompleted(event.record);
    if (stored) {
      this.#unflushed = [];
      this.#seq = completed.seq;
      this.#deliver(completed);
    } else {
      this.emit({ type: "session_error", code: "internal", message: "the turn could not be stored", retryable: true });
      this.emit(event);
    }
    // What follows turn_complete is outside the turn.
    this.#turnIndex = undefined;
    for (const e of held) this.emit(e);
  }

  /**
   * Ends the session for good: cancels the running turn, waits for it to settle (so
   * its record is stored), then releases the agent. Idempotent: every caller, the first
   * or a later one, resolves once the end (with its final status) is stored.
   */
  end(status: Exclude<SessionStatus, "active" | "detached">, reason: string): Promise<void> {
    this.#ending ??= this.#end(status, reason);
    return this.#ending;
  }

  async #end(status: Exclude<SessionStatus, "active" | "detached">, reason: string): Promise<void> {
    if (this.#detachTimer) clearTimeout(this.#detachTimer);
    this.#detachTimer = undefined;
    this.#setStatus(status);
    // Workers first: a turn waiting for them then ends at once.
    try {
      this.#extension?.ended(status, reason);
    } catch (err) {
      this.#deps.log.error({ err, sessionId: this.id }, "session extension failed at the end");
    }
    this.agent.cancelTurn(reason);
    await this.#turn;
    this.emit({ type: "session_completed", status, reason, usage: this.#usage, turns: this.#turns });
    this.#sink = undefined;
    this.agent.dispose();
    const onEnded = this.#onEnded;
    this.#onEnded = undefined;
    const events = this.#unflushed;
    this.#unflushed = [];
    try {
      if (events.length > 0) await this.#deps.persistence.appendEvents(this.principal.tenantId, this.id, events);
      await this.#deps.persistence.setStatus(this.principal.tenantId, this.id, status);
    } catch (err) {
      this.#deps.log.error({ err, sessionId: this.id }, "could not persist session end");
    }
    // The stream ends only once the end is stored: a client that saw it end can read the status.
    onEnded?.();
  }

  #setStatus(status: SessionStatus): void {
    this.#deps.metrics.sessionStatus(this.#status, -1);
    this.#status = status;
    // Live states are counted and stored here; `end()` stores a final one with the last events.
    if (status === "active" || status === "detached") {
      this.#deps.metrics.sessionStatus(status, 1);
      this.#deps.persistence.setStatus(this.principal.tenantId, this.id, status).catch((err: unknown) => {
        this.#deps.log.warn({ err, sessionId: this.id }, "could not persist session status");
      });
    }
  }
}
