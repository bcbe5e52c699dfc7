import { randomUUID } from "node:crypto";
import type { Agent, AgentLimits, Delivery, ToolOutcome, TurnInput, TurnRecord } from "../agent/index.ts";
import { toAgentMode } from "../agent/index.ts";
import { RozError, sessionRetryable, toRozError } from "../errors/index.ts";
import type { TextParts } from "../domain/index.ts";
import { addUsage, emptyUsage, type JsonObject, type TokenUsage } from "../models/index.ts";
import { sessionErrorOf } from "./error-codes.ts";
import { EventLog } from "./event-log.ts";
import type { ClientAnswerRoute, Principal, SessionDeps, SessionExtension, SessionStatus } from "./ports.ts";
import type { SessionRegistry } from "./session-registry.ts";
import { encodeSnapshot, type RunningTurnInfo, type SessionOrigin } from "./snapshot.ts";
import type { LoggedEvent, OutgoingEvent, SequencedEvent, SessionCommand, SessionErrorCode, SessionEvent } from "./types.ts";

/** Events with no flat (v0.2) variant that are not the session's last: see `#number`. */
const isEnvelopeOnly = (event: SessionEvent): boolean => event.type === "model_call_completed" || event.type === "approval_resolved";

/** Merged deltas are flushed at this many characters even within one tick. */
const MAX_MERGED_DELTA = 16_384;

/**
 * One stream attached to a session. `deliver` receives every numbered response from the
 * moment of attaching, in order; `ended` says the session is over (nothing more will come).
 */
export interface Attachment {
  deliver(item: OutgoingEvent): void;
  ended(): void;
}

/** What a stream attaching after `afterSeq` must write before the live events. */
export interface AttachPlan {
  /** Still-open tool requests and approval requests at or before `afterSeq`, sent again (original seq and ids). */
  resent: LoggedEvent[];
  /** Kept responses older than the memory log: read `(afterSeq, beforeSeq)` from the store. */
  stored?: { afterSeq: number; beforeSeq: number };
  /** Kept responses after `afterSeq` still in memory; live events follow them. */
  memory: LoggedEvent[];
}

export type EndStatus = Exclude<SessionStatus, "active" | "detached">;

/** Why a command carries more tools than one request (or, for start, a session) may; undefined when it does not. */
export function toolCapProblem(command: SessionCommand, limits: AgentLimits): string | undefined {
  const tools = command.type === "start" || command.type === "register_tools" || command.type === "user_message" ? command.tools : undefined;
  if (tools === undefined) return undefined;
  const perRequest = limits.maxToolsPerRequest ?? Number.POSITIVE_INFINITY;
  // "More than": a binary request's list was already cut to perRequest + 1 before decoding.
  if (tools.length > perRequest) return `${command.type}.tools has more than ${perRequest} tools; at most ${perRequest} are allowed per request`;
  const perSession = limits.maxTools ?? Number.POSITIVE_INFINITY;
  if (command.type === "start" && tools.length > perSession) return `start.tools has ${tools.length} tools; a session may hold at most ${perSession}`;
  return undefined;
}

/**
 * One started session: its agent, its sequence counter, its event log and its status. It
 * owns its lifetime (not any RPC's): streams attach and detach; a turn keeps running while
 * none is attached.
 *
 * Events are numbered here, so every attached stream sees the same order. Kept events are
 * encoded once (`deps.encodeEvent`) and those bytes go to the log, the store and the wire.
 * A turn's events are persisted together with the turn record before `turn_complete` is
 * delivered: a client that saw `turn_complete` can rely on the turn being stored.
 * Stream-local events (pong, keepalive) take a seq but are neither kept nor replayed.
 */
export class Session {
  readonly id: string;
  readonly principal: Principal;
  readonly model: string;
  readonly agent: Agent;
  readonly #deps: SessionDeps;
  readonly #registry: SessionRegistry;
  readonly #origin: SessionOrigin;
  readonly #log: EventLog;
  #seq: number;
  /** The delta being merged (see `emit`). */
  #pendingDelta: Extract<SessionEvent, { type: "text_delta" | "thinking_delta" }> | undefined;
  #flushScheduled = false;
  /** Events produced while a turn is being stored: delivered (and numbered) after its turn_complete. */
  #held: SessionEvent[] | undefined;
  readonly #attachments = new Set<Attachment>();
  /** Tool requests and approval requests of the running turn, by `tool:`/`approval:` id. */
  readonly #openRequests = new Map<string, LoggedEvent>();
  #ending: Promise<void> | undefined;
  #status: SessionStatus = "active";
  #turn: Promise<void> | undefined;
  #detachTimer: NodeJS.Timeout | undefined;
  /** The running turn waits for the client: a tool result or a permission decision. */
  #awaitingClient = false;
  /** The last attached client half-closed: nothing it could answer will come any more. */
  #inputClosed = false;
  /** The running turn is being cut by a shutdown: it ends as `interrupted`. */
  #interrupting = false;
  /** Store writes of events, one after another (each takes the unflushed events when it runs). */
  #writes: Promise<void> = Promise.resolve();
  #writeScheduled = false;
  /**
   * Rebuilt from the store and nothing numbered since: a client may have seen responses the
   * previous process never stored (the cut turn, keepalives), so any `after_seq` is accepted
   * and numbering continues after it; the seq jumps over what was lost.
   */
  #restoredUnnumbered: boolean;
  /** The running turn, as the state written at its start names it. */
  #running: RunningTurnInfo | undefined;
  /** A turn the previous process was running when it died: recorded as interrupted on first use. */
  #cutTurn: RunningTurnInfo | undefined;
  /** Set while the cut turn is being recorded: requests wait for it (it is a turn of its own). */
  #cutRecording: Promise<void> | undefined;
  /** Turns started so far (in this process); the running one's index while `#turnIndex` is set. */
  #turns = 0;
  #turnIndex: number | undefined;
  /** Usage of every turn so far (in this process), reported when the session ends. */
  #usage: TokenUsage = emptyUsage();
  readonly #extension: SessionExtension | undefined;
  /** Client answers for ids that are not the agent's own (workers' calls). */
  readonly #routes = new Map<string, ClientAnswerRoute>();

  constructor(init: {
    id: string;
    principal: Principal;
    model: string;
    agent: Agent;
    deps: SessionDeps;
    registry: SessionRegistry;
    origin: SessionOrigin;
    /** For a session rebuilt from the store: its last seq (the log continues after it). */
    lastSeq?: number;
    /** For a session rebuilt after a crash: the turn that was running then. */
    cutTurn?: RunningTurnInfo;
    /** Server tools and end hooks (teams), built with the agent. */
    extension?: SessionExtension;
  }) {
    this.id = init.id;
    this.principal = init.principal;
    this.model = init.model;
    this.agent = init.agent;
    this.#deps = init.deps;
    this.#registry = init.registry;
    this.#origin = init.origin;
    this.#seq = init.lastSeq ?? 0;
    this.#restoredUnnumbered = init.lastSeq !== undefined;
    this.#cutTurn = init.cutTurn;
    this.#extension = init.extension;
    this.#log = new EventLog(init.deps.memoryEvents, this.#seq + 1);
    this.#deps.metrics.sessionStatus("active", 1);
  }

  get status(): SessionStatus {
    return this.#status;
  }

  get turnRunning(): boolean {
    return this.#turn !== undefined;
  }

  /** The seq of the last numbered response (kept or stream-local). */
  get lastSeq(): number {
    return this.#seq;
  }

  /** Set once the session is ending (or leaving this process): resolves when that is stored. */
  get ending(): Promise<void> | undefined {
    return this.#ending;
  }

  get attachedStreams(): number {
    return this.#attachments.size;
  }

  /** Resolves when the running turn (if any) has ended. */
  async idle(): Promise<void> {
    await this.#turn;
  }

  /**
   * Numbers the event, keeps it, and hands it to every attached stream. Consecutive deltas
   * of one kind and message are merged until the next tick (or the next other event): a
   * provider's burst becomes one message, not one per token.
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

  /**
   * A stream-local response (pong, keepalive): numbered in the session's order but not kept,
   * and delivered only to `to` (to every attached stream when absent).
   */
  emitLocal(event: SessionEvent, to?: Attachment): void {
    this.#flushDelta();
    if (this.#held) {
      this.#held.push(event);
      return;
    }
    this.#restoredUnnumbered = false;
    const item = this.#sequenced(++this.#seq, event);
    if (to) {
      if (this.#attachments.has(to)) to.deliver(item);
    } else for (const a of this.#attachments) a.deliver(item);
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
    // What only the event envelope can say (a model call's figures, how an approval ended)
    // takes no number of its own: it goes out live with the seq of the event before it, so
    // flat (v0.2) streams, which have no variant for it, see no gap and no empty message.
    if (isEnvelopeOnly(event)) {
      const sequenced = this.#sequenced(this.#seq, event);
      for (const a of this.#attachments) a.deliver(sequenced);
      return;
    }
    this.#restoredUnnumbered = false;
    const sequenced = this.#sequenced(++this.#seq, event);
    // Pongs and keepalives answer one stream: numbered, but never replayed.
    if (event.type === "pong" || event.type === "keepalive") {
      for (const a of this.#attachments) a.deliver(sequenced);
      return;
    }
    const logged = this.#logged(sequenced);
    this.#log.append(logged);
    this.#deliver(logged, event);
    // Events outside turns are stored soon; a turn's events go with its record.
    this.#scheduleWrite();
  }

  /** The event with what envelope streams need besides its seq: whose it is, when, and its turn. */
  #sequenced(seq: number, event: SessionEvent): SequencedEvent {
    const turn = this.#turnIndex !== undefined ? { turnIndex: this.#turnIndex } : {};
    return { seq, event, sessionId: this.id, at: Date.now(), ...turn };
  }

  /** A kept event, encoded once: the log keeps the event too (for envelope streams) while it is in memory. */
  #logged(sequenced: SequencedEvent): LoggedEvent {
    return { ...sequenced, bytes: this.#deps.encodeEvent(sequenced) };
  }

  #deliver(logged: LoggedEvent, event: SessionEvent): void {
    for (const a of this.#attachments) a.deliver(logged);
    this.#trackClientWait(event, logged);
  }

  #trackClientWait(event: SessionEvent, logged: LoggedEvent): void {
    if (event.type === "tool_request") {
      this.#awaitingClient = true;
      this.#openRequests.set(`tool:${event.toolCallId}`, logged);
    } else if (event.type === "activity" && event.state === "waiting_approval") {
      this.#awaitingClient = true;
      this.#openRequests.set(`approval:${event.detail}`, logged);
    } else if (event.type === "turn_complete") {
      this.#awaitingClient = false;
      this.#openRequests.clear();
    } else if (event.type === "activity" && (event.state === "thinking" || event.state === "idle")) {
      this.#awaitingClient = false;
    }
    this.#cancelIfUnanswerable();
  }

  #cancelIfUnanswerable(): void {
    if (this.#inputClosed && this.#awaitingClient) this.agent.cancelTurn("the client closed its request stream");
  }

  /**
   * Attaches a stream. Without `afterSeq` it gets live events only (the stream that started
   * the session); with it, the plan says what to replay first. Synchronous, so that nothing
   * numbered between the plan and the first live event can be lost or doubled.
   * Throws `invalid_argument` when `afterSeq` is beyond the last seq.
   */
  attach(attachment: Attachment, afterSeq?: number): AttachPlan {
    if (afterSeq !== undefined && afterSeq > this.#seq && this.#restoredUnnumbered) this.#seq = afterSeq;
    if (afterSeq !== undefined && afterSeq > this.#seq) {
      throw new RozError("invalid_argument", `after_seq ${afterSeq} is beyond the session's last seq ${this.#seq}`);
    }
    this.#flushDelta();
    if (this.#detachTimer) clearTimeout(this.#detachTimer);
    this.#detachTimer = undefined;
    this.#attachments.add(attachment);
    if (this.#status === "detached") this.#setStatus("active");
    if (afterSeq === undefined) return { resent: [], memory: [] };
    const waits = this.agent.openClientWaits();
    const resent = [...waits.toolCalls.map((id) => `tool:${id}`), ...waits.approvals.map((id) => `approval:${id}`)]
      .map((key) => this.#openRequests.get(key))
      .filter((e): e is LoggedEvent => e !== undefined && e.seq <= afterSeq)
      .sort((a, b) => a.seq - b.seq);
    const from = this.#log.completeFrom;
    // After the plan, so that the record of a cut turn reaches this stream live.
    if (this.#cutTurn) setImmediate(() => void this.#recordCutTurn());
    return {
      resent,
      ...(afterSeq + 1 < from ? { stored: { afterSeq, beforeSeq: from } } : {}),
      memory: this.#log.after(afterSeq),
    };
  }

  /**
   * Detaches a stream. `closed` (a half-close): when it was the last attached stream, the
   * session ends as `completed` once its running turn has (cancelled if it waits for the
   * client, whose answers can no longer come); the stream stays attached until then, so it
   * sees the end of the turn. `broken` (a transport break): with no stream left the session
   * is `detached` and waits `detachGraceMs` for one to come back.
   */
  async detach(attachment: Attachment, how: "closed" | "broken"): Promise<void> {
    if (!this.#attachments.has(attachment)) return;
    if (how === "closed" && this.#attachments.size === 1 && this.#ending === undefined) {
      this.#inputClosed = true;
      this.#cancelIfUnanswerable();
      await this.idle();
      if (this.#attachments.has(attachment) && this.#attachments.size === 1) {
        await this.#registry.end(this, "completed", "client closed the stream");
        return;
      }
      this.#inputClosed = false;
    }
    this.#attachments.delete(attachment);
    this.waitForAttach();
  }

  /**
   * With no stream attached, the session is `detached` and ends after `detachGraceMs` unless
   * one attaches (also for a session rebuilt from the store, before its first attach).
   */
  waitForAttach(): void {
    if (this.#attachments.size > 0 || this.#status !== "active" || this.#ending) return;
    this.#setStatus("detached");
    this.#detachTimer = setTimeout(() => {
      this.#detachTimer = undefined;
      void this.#registry.end(this, "cancelled", "detached session expired");
    }, this.#deps.detachGraceMs);
    this.#detachTimer.unref();
  }

  /**
   * Handles one client request of a started session, from any attached stream (`from`) or
   * from SendToSession (no stream). In-band errors go to every attached stream.
   */
  handle(command: SessionCommand, from?: Attachment): Promise<void> | void {
    // Answered at once (no promise: pings are the hot path of an idle stream), also by an
    // ending session, which answers nothing else: its agent is going away.
    if (command.type === "ping") return this.emitLocal({ type: "pong" }, from);
    if (this.#ending) return;
    return this.#handle(command);
  }

  async #handle(command: Exclude<SessionCommand, { type: "ping" }>): Promise<void> {
    await this.#recordCutTurn();
    const tooMany = toolCapProblem(command, this.#deps.limits);
    if (tooMany !== undefined && command.type !== "start") return this.#error("invalid_argument", tooMany);
    switch (command.type) {
      case "start":
        return this.#error("already_started", "the session has already started");
      case "resume":
        return this.#error("already_started", "this stream is already attached to a session");
      case "user_message": {
        if (this.turnRunning) return this.#error("turn_in_progress", "a turn is already running; wait for turn_complete or cancel it");
        const mode = toAgentMode(command.aiMode) ?? this.#unknownMode(command.aiMode);
        this.startTurn({
          messageId: command.messageId || randomUUID(),
          content: command.content,
          context: command.context,
          mode,
          ...(command.tools ? { tools: command.tools } : {}),
          ...(command.systemContext !== undefined ? { systemContext: command.systemContext } : {}),
        });
        return;
      }
      case "tool_result":
        return this.submitToolResult(command.toolCallId, command.outcome);
      case "permission_decision":
        return this.decidePermission(command.toolCallId, command.approved, command.modifier);
      case "cancel_turn":
        this.agent.cancelTurn(command.reason || "cancelled by client");
        return;
      case "cancel_session":
        return this.#registry.end(this, "cancelled", command.reason || "cancelled by client");
      case "register_tools":
        try {
          this.agent.registerTools(command.source || undefined, command.tools, command.systemContext);
        } catch (err) {
          const { code, message } = sessionErrorOf(toRozError(err));
          return this.#error(code, message);
        }
        if (!this.turnRunning) this.storeState();
        return;
      case "feedback":
        return this.#feedback(command.messageId, command.rating);
      case "unsupported":
        return;
    }
  }

  /** §2: an `ai_mode` this server does not know runs as `react`, as in v0.2; operators see it in the log. */
  #unknownMode(aiMode: string | undefined): "react" {
    this.#deps.log.warn({ sessionId: this.id, aiMode }, "unknown ai_mode: running the turn as react");
    return "react";
  }

  /** Sends the client's answers for `toolCallId` to `route` (not the agent) until the returned function runs. */
  route(toolCallId: string, route: ClientAnswerRoute): () => void {
    this.#routes.set(toolCallId, route);
    return () => {
      if (this.#routes.get(toolCallId) === route) this.#routes.delete(toolCallId);
    };
  }

  /**
   * A client's result for a tool call (the agent's own, else a routed worker's): the first
   * one for an open call wins, any later one (from this or another attached client) gets
   * `unknown_tool_call`.
   */
  submitToolResult(toolCallId: string, outcome: ToolOutcome): void {
    let delivery: Delivery = this.agent.submitToolResult(toolCallId, outcome);
    if (delivery !== "accepted" && this.#routes.get(toolCallId)?.result(outcome) === true) delivery = "accepted";
    if (delivery === "no_active_turn") return this.#error("no_active_turn", "no turn is running");
    if (delivery === "unknown") return this.#error("unknown_tool_call", `no open tool call "${toolCallId}"`);
    this.#openRequests.delete(`tool:${toolCallId}`);
  }

  /**
   * A client's approval decision (the agent's own call, else a routed one); the first one for
   * a waiting call wins, like tool results. `modifier` is merged into an approved call's arguments.
   */
  decidePermission(toolCallId: string, approved: boolean, modifier?: JsonObject): void {
    let delivery: Delivery = this.agent.decidePermission(toolCallId, approved, modifier);
    if (delivery !== "accepted" && this.#routes.get(toolCallId)?.decide(approved) === true) delivery = "accepted";
    if (delivery === "no_active_turn") return this.#error("no_active_turn", "no turn is running");
    if (delivery === "unknown") return this.#error("unknown_tool_call", `no tool call "${toolCallId}" is waiting for approval`);
    this.#openRequests.delete(`approval:${toolCallId}`);
  }

  /** A non-fatal in-band error for every attached stream; its `retryable` flag is the §8 table's. */
  #error(code: SessionErrorCode, message: string): void {
    this.#deps.metrics.error(code);
    this.emit({ type: "session_error", code, message, retryable: sessionRetryable(code, false) });
  }

  async #feedback(messageId: string, rating: string): Promise<void> {
    if (messageId === "" || rating === "") return this.#error("invalid_argument", "feedback needs message_id and rating");
    try {
      await this.#deps.persistence.putFeedback(this.principal.tenantId, this.id, messageId, rating);
    } catch (err) {
      this.#deps.log.error({ err }, "could not store feedback");
      this.#error("internal", "could not store feedback");
    }
  }

  /**
   * Stores the session's state in the write order (so a later turn write always lands after
   * it): a new session's, so that another node can adopt it before its first turn, and a
   * starting turn's, so that an adopting node knows the turn was cut.
   */
  storeState(failure = "could not persist session state"): void {
    void this.#write(async () => {
      try {
        await this.#deps.persistence.saveState(this.principal.tenantId, this.id, await this.#snapshot(this.#seq));
      } catch (err) {
        this.#deps.log.warn({ err, sessionId: this.id }, failure);
      }
      return false;
    });
  }

  /** Starts a turn; the caller checked that none is running. */
  startTurn(input: TurnInput): void {
    this.#turnIndex = ++this.#turns;
    this.#running = { messageId: input.messageId, userContent: input.content, mode: input.mode, startedAt: Date.now() };
    this.storeState("could not persist the running turn");
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
        if (event.type === "turn_complete") await this.#completeTurn(this.#interrupting ? this.#asInterrupted(event) : event);
        else this.emit(event);
      }
    } catch (err) {
      // The agent guarantees a turn_complete; reaching here is a bug worth a log line.
      this.#deps.log.error({ err, sessionId: this.id }, "turn failed outside the agent loop");
      this.emit({ type: "session_error", code: "internal", message: "internal error", retryable: true });
    } finally {
      this.#interrupting = false;
    }
  }

  /** A turn cut by a shutdown: `SessionError{interrupted}`, then its turn_complete as `error`. */
  #asInterrupted(event: Extract<SessionEvent, { type: "turn_complete" }>): Extract<SessionEvent, { type: "turn_complete" }> {
    const message = "the turn was interrupted by a server restart; send it again";
    this.emit({ type: "session_error", code: "interrupted", message, retryable: true });
    const record: TurnRecord = { ...event.record, stopReason: "error", error: { code: "interrupted", message, retryable: true } };
    return { ...event, stopReason: "error", record };
  }

  /**
   * Stores the turn with every event since the last flush, its own turn_complete included,
   * and the session's state, in one write; only then is turn_complete delivered. Events
   * produced meanwhile (pongs, keepalives) wait, so numbers stay in delivery order. When
   * the store fails, the client gets a retryable `internal` error before turn_complete, and
   * the events stay queued for the next write.
   */
  async #completeTurn(event: Extract<SessionEvent, { type: "turn_complete" }>): Promise<void> {
    this.#flushDelta();
    this.#running = undefined;
    this.#usage = addUsage(this.#usage, event.usage);
    const seq = this.#seq + 1;
    const completed = this.#logged(this.#sequenced(seq, event));
    this.#held = [];
    let stored = false;
    await this.#write(async (batch) => {
      try {
        await this.#deps.persistence.appendTurn(this.principal.tenantId, this.id, event.record, [...batch, completed], await this.#snapshot(seq));
        stored = true;
      } catch (err) {
        this.#deps.log.error({ err, sessionId: this.id }, "could not persist turn");
        this.#deps.metrics.error("store");
      }
      return stored;
    });
    const held = this.#held;
    this.#held = undefined;
    this.#deps.metrics.turnCompleted(event.record);
    if (stored) {
      this.#seq = seq;
      this.#log.append(completed);
      this.#log.flushed(1);
      this.#deliver(completed, event);
    } else {
      this.emit({ type: "session_error", code: "internal", message: "the turn could not be stored", retryable: true });
      this.emit(event);
    }
    // What follows turn_complete is outside the turn.
    this.#turnIndex = undefined;
    for (const e of held) {
      if (e.type === "pong" || e.type === "keepalive") this.emitLocal(e);
      else this.emit(e);
    }
  }

  /**
   * Runs one store write of the unflushed events after the writes before it: `run` gets
   * them and says whether they were stored.
   */
  #write(run: (batch: LoggedEvent[]) => Promise<boolean>): Promise<void> {
    const next = this.#writes.then(async () => {
      const batch = this.#log.unflushed();
      if (await run(batch)) this.#log.flushed(batch.length);
    });
    this.#writes = next.catch(() => undefined);
    return next;
  }

  /** Stores the events emitted outside a turn (session_started, errors) on the next tick. */
  #scheduleWrite(): void {
    if (this.#writeScheduled) return;
    this.#writeScheduled = true;
    setImmediate(() => {
      this.#writeScheduled = false;
      if (this.#turn) return; // the turn's write takes them
      void this.#flushEvents();
    });
  }

  #flushEvents(): Promise<void> {
    return this.#write(async (batch) => {
      if (batch.length === 0) return true;
      try {
        await this.#deps.persistence.appendEvents(this.principal.tenantId, this.id, batch);
        return true;
      } catch (err) {
        this.#deps.log.warn({ err, sessionId: this.id }, "could not persist session events");
        return false;
      }
    });
  }

  #snapshot(lastSeq: number): Promise<TextParts> {
    return encodeSnapshot({
      version: 1,
      model: this.model,
      ...this.#origin,
      tools: this.agent.clientTools(),
      history: this.agent.history(),
      ...(this.agent.pendingSystemContext !== undefined ? { pendingSystemContext: this.agent.pendingSystemContext } : {}),
      lastSeq,
      ...(this.#running ? { runningTurn: this.#running } : {}),
    });
  }

  /**
   * Records the turn a crashed process was running as interrupted, like a turn cut by a
   * shutdown: `SessionError{interrupted}`, then its `turn_complete{error}`, stored as a turn
   * (its user message, no answer). Once, at the session's first attach or request here.
   */
  async #recordCutTurn(): Promise<void> {
    const cut = this.#cutTurn;
    if (!cut || this.#ending) return this.#cutRecording;
    this.#cutTurn = undefined;
    const usage = emptyUsage();
    const record: TurnRecord = {
      messageId: cut.messageId,
      userContent: cut.userContent,
      userContext: [],
      mode: cut.mode,
      assistantText: "",
      assistantThinking: "",
      assistantThinkingBlocks: [],
      toolCalls: [],
      usage,
      stopReason: "cancelled",
      compactions: 0,
      startedAt: cut.startedAt,
      endedAt: Date.now(),
    };
    const event = { type: "turn_complete" as const, messageId: cut.messageId, usage, stopReason: "cancelled" as const, record };
    const turn = Promise.resolve()
      .then(() => {
        this.#turnIndex = ++this.#turns;
        return this.#completeTurn(this.#asInterrupted(event));
      })
      .catch((err: unknown) => this.#deps.log.error({ err, sessionId: this.id }, "could not record the cut turn"))
      .finally(() => {
        this.#turn = undefined;
        this.#turnIndex = undefined;
      });
    this.#turn = turn;
    this.#cutRecording = turn.finally(() => {
      this.#cutRecording = undefined;
    });
    await turn;
  }

  /** Cuts the running turn for a shutdown: it ends with `interrupted` (stored like any turn). */
  interrupt(): void {
    if (!this.#turn) return;
    this.#interrupting = true;
    this.agent.cancelTurn("the server is shutting down");
  }

  /**
   * Leaves this process without ending: the running turn is interrupted, everything is
   * stored (events, state, status `detached`), and the agent released. The next process
   * rebuilds the session from the store when a client re-attaches.
   */
  async suspend(): Promise<void> {
    if (this.#ending) return this.#ending;
    this.#ending = (async () => {
      if (this.#detachTimer) clearTimeout(this.#detachTimer);
      this.#detachTimer = undefined;
      this.interrupt();
      await this.#turn;
      this.#flushDelta();
      this.#attachments.clear();
      this.agent.dispose();
      await this.#flushEvents();
      try {
        await this.#deps.persistence.saveState(this.principal.tenantId, this.id, await this.#snapshot(this.#seq));
        await this.#deps.persistence.setStatus(this.principal.tenantId, this.id, "detached");
      } catch (err) {
        this.#deps.log.error({ err, sessionId: this.id }, "could not persist detached session");
      }
      // The session leaves this process: it no longer counts here.
      this.#deps.metrics.sessionStatus(this.#status, -1);
    })();
    return this.#ending;
  }

  /**
   * Ends the session for good: cancels the running turn, waits for it to settle (so its
   * record is stored), then releases the agent and tells every attached stream. Idempotent:
   * every caller resolves once the end (with its final status) is stored.
   */
  end(status: EndStatus, reason: string): Promise<void> {
    this.#ending ??= this.#end(status, reason);
    return this.#ending;
  }

  async #end(status: EndStatus, reason: string): Promise<void> {
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
    this.#flushDelta();
    this.emit({ type: "session_completed", status, reason, usage: this.#usage, turns: this.#turns });
    this.agent.dispose();
    const attached = [...this.#attachments];
    this.#attachments.clear();
    await this.#flushEvents();
    try {
      await this.#deps.persistence.setStatus(this.principal.tenantId, this.id, status);
    } catch (err) {
      this.#deps.log.error({ err, sessionId: this.id }, "could not persist session end");
    }
    // Streams end only now: a client whose RPC ended may rely on the end being stored.
    for (const a of attached) a.ended();
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
