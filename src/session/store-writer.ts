import type { Agent, TurnRecord } from "../agent/index.ts";
import type { SessionStateWrite } from "../store/index.ts";
import type { EventLog } from "./event-log.ts";
import type { SessionDeps, SessionStatus } from "./ports.ts";
import type { RunningTurnInfo, SessionOrigin } from "./snapshot.ts";
import { StoredHistory, stateWrite } from "./stored-history.ts";
import type { LoggedEvent } from "./types.ts";
import type { WaitingInput } from "./waiting-inputs.ts";

/** What a session's writes need to know of it. */
export interface StoreWriterInit {
  tenantId: string;
  sessionId: string;
  model: string;
  origin: SessionOrigin;
  agent: Agent;
  log: EventLog;
  deps: Pick<SessionDeps, "persistence" | "log" | "metrics">;
  /** The running turn, as the state written at its start names it. */
  running: () => RunningTurnInfo | undefined;
  turnRunning: () => boolean;
  lastSeq: () => number;
  /** The number of the last turn started. */
  lastTurn: () => number;
  /** The user messages that wait (stored with the state). */
  waitingInputs: () => WaitingInput[];
  /** What the store has of the session's messages (a rebuilt session's or a fork's); default: nothing. */
  stored?: StoredHistory;
}

/**
 * The session's writes to the store, one after another, so that a later write always
 * lands after an earlier one. Each takes the log's unflushed events when it runs: events
 * outside turns are batched into one write on the next tick; a turn's events go with its
 * record and the session's state (everything needed to continue it: a state row, and the
 * messages added or rewritten since the last write).
 */
export class StoreWriter {
  readonly #init: StoreWriterInit;
  readonly #stored: StoredHistory;
  #writes: Promise<void> = Promise.resolve();
  #writeScheduled = false;

  constructor(init: StoreWriterInit) {
    this.#init = init;
    this.#stored = init.stored ?? new StoredHistory();
  }

  /**
   * Stores the session's state in the write order: a new session's, so that another node
   * can adopt it before its first turn, and a starting turn's, so that an adopting node
   * knows the turn was cut.
   */
  storeState(failure = "could not persist session state"): void {
    const { deps, tenantId, sessionId } = this.#init;
    void this.#write(async () => {
      try {
        await this.#withState(this.#init.lastSeq(), (state) => deps.persistence.saveState(tenantId, sessionId, state));
      } catch (err) {
        deps.log.warn({ err, sessionId }, failure);
      }
      return false;
    });
  }

  /** Stores a turn with every unflushed event and `completed` (its turn_complete, numbered `completed.seq`), and the state; true when stored. */
  async storeTurn(record: TurnRecord, completed: LoggedEvent): Promise<boolean> {
    const { deps, tenantId, sessionId } = this.#init;
    let stored = false;
    await this.#write(async (batch) => {
      try {
        await this.#withState(completed.seq, (state) => deps.persistence.appendTurn(tenantId, sessionId, record, [...batch, completed], state));
        stored = true;
      } catch (err) {
        deps.log.error({ err, sessionId }, "could not persist turn");
        deps.metrics.error("store");
      }
      return stored;
    });
    return stored;
  }

  /** Marks the turns numbered `turns` rolled back, with the state after the rollback, in the write order; throws when the store fails. */
  async storeRollback(turns: readonly number[]): Promise<void> {
    const { deps, tenantId, sessionId } = this.#init;
    let failure: unknown;
    await this.#write(async () => {
      try {
        await this.#withState(this.#init.lastSeq(), (state) => deps.persistence.rollBackTurns(tenantId, sessionId, turns, state));
      } catch (err) {
        failure = err;
      }
      return false;
    });
    if (failure !== undefined) throw failure;
  }

  /** Stores the events emitted outside a turn (session_started, errors) on the next tick. */
  schedule(): void {
    if (this.#writeScheduled) return;
    this.#writeScheduled = true;
    setImmediate(() => {
      this.#writeScheduled = false;
      if (this.#init.turnRunning()) return; // the turn's write takes them
      void this.flushEvents();
    });
  }

  /** Stores the unflushed events now (after the writes before). */
  flushEvents(): Promise<void> {
    const { deps, tenantId, sessionId } = this.#init;
    return this.#write(async (batch) => {
      if (batch.length === 0) return true;
      try {
        await deps.persistence.appendEvents(tenantId, sessionId, batch);
        return true;
      } catch (err) {
        deps.log.warn({ err, sessionId }, "could not persist session events");
        return false;
      }
    });
  }

  /** Stores the state and then `status`, after the writes before (the session leaves this process); throws when the store fails. */
  async storeLeaving(status: SessionStatus): Promise<void> {
    const { deps, tenantId, sessionId } = this.#init;
    let failure: unknown;
    await this.#write(async () => {
      try {
        await this.#withState(this.#init.lastSeq(), (state) => deps.persistence.saveState(tenantId, sessionId, state));
        await deps.persistence.setStatus(tenantId, sessionId, status);
      } catch (err) {
        failure = err;
      }
      return false;
    });
    if (failure !== undefined) throw failure;
  }

  /** Runs one store write of the unflushed events after the writes before it: `run` gets them and says whether they were stored. */
  #write(run: (batch: LoggedEvent[]) => Promise<boolean>): Promise<void> {
    const next = this.#writes.then(async () => {
      const batch = this.#init.log.unflushed();
      if (await run(batch)) this.#init.log.flushed(batch.length);
    });
    this.#writes = next.catch(() => undefined);
    return next;
  }

  /** Runs `store` with the session's state as it is now; once it succeeded, the messages it wrote count as stored. */
  async #withState(lastSeq: number, store: (state: SessionStateWrite) => Promise<void>): Promise<void> {
    const { model, origin, agent } = this.#init;
    const running = this.#init.running();
    const waiting = this.#init.waitingInputs();
    const { write, commit } = await stateWrite(this.#stored, {
      version: 1,
      model,
      ...origin,
      tools: agent.clientTools(),
      history: agent.history(),
      ...(agent.pendingSystemContext !== undefined ? { pendingSystemContext: agent.pendingSystemContext } : {}),
      lastSeq,
      lastTurn: this.#init.lastTurn(),
      ...(running ? { runningTurn: running } : {}),
      ...(waiting.length > 0 ? { waitingInputs: waiting } : {}),
    });
    await store(write);
    commit();
  }
}
