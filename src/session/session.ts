import type { Agent, ToolOutcome, TurnInput } from "../agent/index.ts";
import type { JsonObject } from "../models/index.ts";
import { ClientAnswers } from "./client-answers.ts";
import { ClientWaits } from "./client-waits.ts";
import { inBandError } from "./error-codes.ts";
import { EventLog } from "./event-log.ts";
import { type Attachment, FanOut } from "./fan-out.ts";
import { type EndStatus, Lifecycle } from "./lifecycle.ts";
import { lifecycleLog } from "./lifecycle-log.ts";
import type { ClientAnswerRoute, Principal, SessionDeps, SessionExtension, SessionStatus } from "./ports.ts";
import { SessionRequests } from "./requests.ts";
import { type RollbackResult, Rollbacks } from "./rollback.ts";
import type { AttachPlan } from "./replay.ts";
import { Sequencer } from "./sequencer.ts";
import type { RunningTurnInfo, SessionOrigin } from "./snapshot.ts";
import { StoreWriter, type StoreWriterInit } from "./store-writer.ts";
import { TurnRunner } from "./turn-runner.ts";
import type { SessionCommand, SessionErrorCode, SessionEvent } from "./types.ts";
import { UserInputs } from "./user-inputs.ts";
import type { WaitingInput, WaitingInputView } from "./waiting-inputs.ts";

export type { Attachment } from "./fan-out.ts";
export type { EndStatus } from "./lifecycle.ts";
export { toolCapProblem } from "./requests.ts";
export type { AttachPlan } from "./replay.ts";

/**
 * One started session: its agent, its sequence counter, its event log and its status. It
 * owns its lifetime (not any RPC's): streams attach and detach; a turn keeps running while
 * none is attached. The one object the other layers talk to; its parts each keep one concern:
 * the order and the log (`Sequencer`, `EventLog`), the attached streams (`FanOut`) and what
 * they owe (`ClientWaits`, `ClientAnswers`), the turns (`TurnRunner`), the store
 * (`StoreWriter`), the requests (`SessionRequests`) and the status over its life (`Lifecycle`).
 */
export class Session {
  readonly id: string;
  readonly principal: Principal;
  readonly model: string;
  readonly agent: Agent;
  readonly #deps: SessionDeps;
  readonly #log: EventLog;
  readonly #streams = new FanOut();
  readonly #waits: ClientWaits;
  readonly #sequencer: Sequencer;
  readonly #writer: StoreWriter;
  readonly #turns: TurnRunner;
  readonly #answers: ClientAnswers;
  readonly #requests: SessionRequests;
  readonly #lifecycle: Lifecycle;
  readonly #rollbacks: Rollbacks;
  readonly #inputs: UserInputs;

  constructor(init: {
    id: string;
    principal: Principal;
    model: string;
    agent: Agent;
    deps: SessionDeps;
    /** Where every end of this session goes, so the live-session registry forgets it (see SessionRegistry.end). */
    registry: { end(session: Session, status: EndStatus, reason: string): Promise<void> };
    origin: SessionOrigin;
    /** For a session rebuilt from the store: its last seq (the log continues after it). */
    lastSeq?: number;
    /** For a session rebuilt after a crash: the turn that was running then. */
    cutTurn?: RunningTurnInfo;
    /** For a session rebuilt from the store or a fork: the number of its last turn. */
    lastTurn?: number;
    /** For a session rebuilt from the store: the user messages that waited. */
    waitingInputs?: readonly WaitingInput[];
    /** Server tools and end hooks (teams), built with the agent. */
    extension?: SessionExtension;
    /** What the store has of its messages (a rebuilt session's, a fork's). */
    stored?: StoreWriterInit["stored"];
  }) {
    const { id, agent, deps, registry } = init;
    const tenantId = init.principal.tenantId;
    this.id = id;
    this.principal = init.principal;
    this.model = init.model;
    this.agent = agent;
    this.#deps = deps;
    this.#log = new EventLog(deps.memoryEvents, (init.lastSeq ?? 0) + 1, { sessionId: id, ...(deps.decodeDelta ? { decodeDelta: deps.decodeDelta } : {}) });
    this.#waits = new ClientWaits(() => agent.cancelTurn("the client closed its request stream"));
    this.#sequencer = new Sequencer({
      sessionId: id,
      log: this.#log,
      encode: deps.encodeEvent,
      ...(init.lastSeq !== undefined ? { lastSeq: init.lastSeq } : {}),
      observe: lifecycleLog(deps.log, { sessionId: id, tenantId }),
      out: {
        live: (item, to) => this.#streams.deliver(item, to),
        kept: (logged, event) => {
          this.#streams.deliver(logged);
          this.#waits.track(event, logged);
        },
        unstored: () => this.#writer.schedule(),
      },
    });
    this.#writer = new StoreWriter({
      tenantId,
      sessionId: id,
      model: init.model,
      origin: init.origin,
      agent,
      log: this.#log,
      deps,
      running: () => this.#turns.runningTurn,
      turnRunning: () => this.#turns.running,
      lastSeq: () => this.#sequencer.lastSeq,
      lastTurn: () => this.#turns.lastTurn,
      waitingInputs: () => this.#inputs.all(),
      ...(init.stored ? { stored: init.stored } : {}),
    });
    const ending = (): boolean => this.#lifecycle.ending !== undefined;
    this.#turns = new TurnRunner({
      sessionId: id,
      model: init.model,
      agent,
      sequencer: this.#sequencer,
      writer: this.#writer,
      deps,
      ending,
      ...(init.cutTurn ? { cutTurn: init.cutTurn } : {}),
      ...(init.lastTurn !== undefined ? { lastTurn: init.lastTurn } : {}),
      ended: () => this.#inputs.resume(),
    });
    const error = (code: SessionErrorCode, message: string, requestId?: string): void => this.#error(code, message, requestId);
    this.#inputs = new UserInputs({
      agent,
      turns: this.#turns,
      writer: this.#writer,
      emit: (event) => this.emit(event),
      error,
      maxWaiting: deps.maxWaitingInputs,
      ending,
      ...(init.waitingInputs ? { restored: init.waitingInputs } : {}),
    });
    this.#answers = new ClientAnswers(agent, this.#waits, error);
    const common = { sessionId: id, tenantId, agent, deps, turns: this.#turns, writer: this.#writer, inputs: this.#inputs };
    const rollbacks = new Rollbacks({ ...common, origin: init.origin, ending, emit: (event) => this.emit(event) });
    this.#rollbacks = rollbacks;
    this.#requests = new SessionRequests({ ...common, answers: this.#answers, error, rollbacks, cancel: (reason) => registry.end(this, "cancelled", reason) });
    this.#lifecycle = new Lifecycle({
      ...common,
      streams: this.#streams,
      waits: this.#waits,
      sequencer: this.#sequencer,
      extension: init.extension,
      end: (status, reason) => registry.end(this, status, reason),
    });
  }

  get status(): SessionStatus {
    return this.#lifecycle.status;
  }

  get turnRunning(): boolean {
    return this.#turns.running;
  }

  /** The seq of the last numbered response (kept or stream-local). */
  get lastSeq(): number {
    return this.#sequencer.lastSeq;
  }

  /** Set once the session is ending (or leaving this process): resolves when that is stored. */
  get ending(): Promise<void> | undefined {
    return this.#lifecycle.ending;
  }

  get attachedStreams(): number {
    return this.#streams.size;
  }

  /** The user messages that wait (REST `queued_inputs`). */
  get waitingInputs(): WaitingInputView[] {
    return this.#inputs.view();
  }

  /** Resolves when the running turn (if any) has ended. */
  idle(): Promise<void> {
    return this.#turns.idle();
  }

  /** Numbers the event, keeps it, and hands it to every attached stream (see `Sequencer.emit`). */
  emit(event: SessionEvent): void {
    this.#sequencer.emit(event);
  }

  /** A stream-local response (pong, keepalive): numbered but not kept, delivered only to `to` (to every attached stream when absent). */
  emitLocal(event: SessionEvent, to?: Attachment): void {
    this.#sequencer.emitLocal(event, to);
  }

  /**
   * Attaches a stream. Without `afterSeq` it gets live events only (the stream that started
   * the session); with it, the plan says what to replay first. Synchronous, so that nothing
   * numbered between the plan and the first live event can be lost or doubled.
   * Throws `invalid_argument` when `afterSeq` is beyond the last seq.
   */
  attach(attachment: Attachment, afterSeq?: number): AttachPlan {
    if (afterSeq !== undefined) this.#sequencer.admit(afterSeq);
    this.#sequencer.flush();
    this.#lifecycle.attached(attachment);
    if (afterSeq === undefined) return { resent: [], memory: [] };
    const resent = this.#waits.resent(this.agent.openClientWaits(), afterSeq);
    const from = this.#log.completeFrom;
    // After the plan, so that the record of a cut turn (and the turn a waiting message starts) reaches this stream live.
    if (this.#turns.hasCutTurn) setImmediate(() => void this.#turns.recordCutTurn());
    else setImmediate(() => this.#inputs.resume());
    return {
      resent,
      ...(afterSeq + 1 < from ? { stored: { afterSeq, beforeSeq: from } } : {}),
      memory: this.#log.after(afterSeq),
    };
  }

  /** Detaches a stream (see `Lifecycle.detach`). */
  detach(attachment: Attachment, how: "closed" | "broken"): Promise<void> {
    return this.#lifecycle.detach(attachment, how);
  }

  /** With no stream attached, the session is `detached` and ends after `detachGraceMs` unless one attaches. */
  waitForAttach(): void {
    this.#lifecycle.waitForAttach();
  }

  /**
   * Handles one client request of a started session, from any attached stream (`from`) or
   * from SendToSession (no stream). In-band errors go to every attached stream.
   */
  handle(command: SessionCommand, from?: Attachment): Promise<void> | void {
    // Answered at once (no promise: pings are the hot path of an idle stream), also by an
    // ending session, which answers nothing else: its agent is going away.
    if (command.type === "ping") return this.emitLocal({ type: "pong" }, from);
    if (this.#lifecycle.ending) return;
    return this.#requests.handle(command);
  }

  /** Sends the client's answers for `toolCallId` to `route` (not the agent) until the returned function runs. */
  route(toolCallId: string, route: ClientAnswerRoute): () => void {
    return this.#answers.route(toolCallId, route);
  }

  /** A client's result for a tool call: the first one for an open call wins, a later one gets `unknown_tool_call`. */
  submitToolResult(toolCallId: string, outcome: ToolOutcome): void {
    this.#answers.submitToolResult(toolCallId, outcome);
  }

  /** A client's approval decision; the first one wins, like tool results. `modifier` is merged into an approved call's arguments. */
  decidePermission(toolCallId: string, approved: boolean, modifier?: JsonObject): void {
    this.#answers.decidePermission(toolCallId, approved, modifier);
  }

  /**
   * Removes the last `turns` completed turns from what the model sees next (see `rollBack`)
   * and tells every attached stream with `rolled_back`; throws the refusal otherwise.
   */
  rollback(turns: number): Promise<RollbackResult> {
    return this.#rollbacks.run(turns);
  }

  /** Stores the session's state in the write order (see `StoreWriter.storeState`). */
  storeState(failure?: string): void {
    this.#writer.storeState(failure);
  }

  /** Starts a turn; the caller checked that none is running. */
  startTurn(input: TurnInput): void {
    this.#turns.start(input);
  }

  /** Cuts the running turn for a shutdown: it ends with `interrupted` (stored like any turn). */
  interrupt(): void {
    this.#turns.interrupt();
  }

  /** Leaves this process without ending, resumable by the next (see `Lifecycle.suspend`). */
  suspend(): Promise<void> {
    return this.#lifecycle.suspend();
  }

  /** Ends the session for good (see `Lifecycle.end`); idempotent. */
  end(status: EndStatus, reason: string): Promise<void> {
    return this.#lifecycle.end(status, reason);
  }

  /** A non-fatal in-band error for every attached stream; `requestId` names the request it answers. */
  #error(code: SessionErrorCode, message: string, requestId?: string): void {
    this.#deps.metrics.error(code);
    this.emit({ ...inBandError(code, message), ...(requestId ? { requestId } : {}) });
  }
}
