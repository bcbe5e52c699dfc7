import type { Agent, TraceContext, TurnInput, TurnRecord } from "../agent/index.ts";
import { addUsage, emptyUsage, type TokenUsage } from "../models/index.ts";
import type { SessionDeps } from "./ports.ts";
import type { Sequencer } from "./sequencer.ts";
import type { RunningTurnInfo } from "./snapshot.ts";
import type { StoreWriter } from "./store-writer.ts";
import type { SessionEvent } from "./types.ts";

type TurnComplete = Extract<SessionEvent, { type: "turn_complete" }>;

const INTERRUPTED = "the turn was interrupted by a server restart; send it again";

/**
 * Runs a session's turns, one at a time: the agent's events go to the sequencer, and a
 * turn's end is stored (record, events, state) before its `turn_complete` is delivered, so
 * a client that saw `turn_complete` can rely on the turn being stored. A turn cut by a
 * shutdown, or by a crash of the previous process, ends as `interrupted` (§6 restarts).
 */
export class TurnRunner {
  readonly #sessionId: string;
  readonly #agent: Agent;
  readonly #sequencer: Sequencer;
  readonly #writer: StoreWriter;
  readonly #model: string;
  readonly #deps: Pick<SessionDeps, "log" | "metrics" | "tracing">;
  /** Whether the session is ending (or leaving this process): a cut turn is then not recorded here. */
  readonly #ending: () => boolean;
  readonly #ended: () => void;
  #turn: Promise<void> | undefined;
  /** Turns started so far (in this process). */
  #turns = 0;
  /** The number of the last turn started in the session's life (§11: every turn counts, across processes). */
  #lastTurn: number;
  /** The running turn's number. */
  #current = 0;
  /** Usage of every turn so far (in this process), reported when the session ends. */
  #usage: TokenUsage = emptyUsage();
  /** The running turn, as the state written at its start names it. */
  #running: RunningTurnInfo | undefined;
  /** The running turn is being cut by a shutdown: it ends as `interrupted`. */
  #interrupting = false;
  /** A turn the previous process was running when it died: recorded as interrupted on first use. */
  #cutTurn: RunningTurnInfo | undefined;
  /** Set while the cut turn is being recorded: requests wait for it (it is a turn of its own). */
  #cutRecording: Promise<void> | undefined;

  constructor(init: {
    sessionId: string;
    /** The session's model (`provider/model`), for the turn's span. */
    model: string;
    agent: Agent;
    sequencer: Sequencer;
    writer: StoreWriter;
    deps: Pick<SessionDeps, "log" | "metrics" | "tracing">;
    ending: () => boolean;
    cutTurn?: RunningTurnInfo;
    /** The number of the session's last turn before this process (0 for a new session). */
    lastTurn?: number;
    /** After each turn has ended (its turn_complete delivered): the next waiting message may start. */
    ended?: () => void;
  }) {
    this.#sessionId = init.sessionId;
    this.#model = init.model;
    this.#agent = init.agent;
    this.#sequencer = init.sequencer;
    this.#writer = init.writer;
    this.#deps = init.deps;
    this.#ending = init.ending;
    this.#cutTurn = init.cutTurn;
    this.#lastTurn = init.lastTurn ?? 0;
    this.#ended = init.ended ?? (() => {});
  }

  get running(): boolean {
    return this.#turn !== undefined;
  }

  get runningTurn(): RunningTurnInfo | undefined {
    return this.#running;
  }

  get turns(): number {
    return this.#turns;
  }

  /** The number of the last turn started (0: none yet). */
  get lastTurn(): number {
    return this.#lastTurn;
  }

  get usage(): TokenUsage {
    return this.#usage;
  }

  /** A turn cut by a crash waits to be recorded. */
  get hasCutTurn(): boolean {
    return this.#cutTurn !== undefined;
  }

  /** Resolves when the running turn (if any) has ended. */
  async idle(): Promise<void> {
    await this.#turn;
  }

  /** Resolves once no turn runs, also after the turns that waiting messages start one after another. */
  async settled(): Promise<void> {
    while (this.#turn !== undefined) await this.#turn;
  }

  /** Starts a turn; the caller checked that none is running. `trace`: the client's span the turn's span becomes a child of. */
  start(input: TurnInput, trace?: TraceContext): void {
    const turn = this.#number();
    this.#running = { messageId: input.messageId, userContent: input.content, mode: input.mode, startedAt: Date.now(), turn };
    this.#writer.storeState("could not persist the running turn");
    const tracing = this.#deps.tracing;
    if (tracing === undefined) {
      this.#track(this.#run(input));
      return;
    }
    // The whole turn runs with its span active: the agent's spans and the log lines of the turn belong to it.
    const span = tracing.startTurn({ conversationId: this.#sessionId, model: this.#model, input: input.content, ...(trace ? { parent: trace } : {}) });
    let ended: TurnRecord | undefined;
    this.#track(span.run(() => this.#run(input, (record) => (ended = record))).finally(() => span.end(ended)));
  }

  /** Cuts the running turn for a shutdown: it ends with `interrupted` (stored like any turn). */
  interrupt(): void {
    if (!this.#turn) return;
    this.#interrupting = true;
    this.#agent.cancelTurn("the server is shutting down");
  }

  /** Numbers the turn that starts now: the next number, or `cut`'s own for a cut turn that has one. */
  #number(cut?: number): number {
    this.#turns++;
    this.#current = cut ?? ++this.#lastTurn;
    this.#sequencer.turnIndex = this.#current;
    return this.#current;
  }

  #track(run: Promise<void>): Promise<void> {
    const turn = run.finally(() => {
      this.#turn = undefined;
      this.#sequencer.turnIndex = undefined;
      this.#ended();
    });
    this.#turn = turn;
    return turn;
  }

  /** `ended`: told of the turn's record once it is stored and delivered. */
  async #run(input: TurnInput, ended?: (record: TurnRecord) => void): Promise<void> {
    try {
      for await (const event of this.#agent.runTurn(input)) {
        if (event.type === "error") this.#deps.metrics.error(event.code);
        if (event.type === "turn_complete") {
          const record = await this.#complete(this.#interrupting ? this.#asInterrupted(event) : event);
          ended?.(record);
        } else this.#sequencer.emit(event);
        // The model saw a steered message: the state now stored holds it in the history, not as waiting.
        if (event.type === "steered") this.#writer.storeState();
      }
    } catch (err) {
      // The agent guarantees a turn_complete; reaching here is a bug worth a log line.
      this.#deps.log.error({ err, sessionId: this.#sessionId }, "turn failed outside the agent loop");
      this.#sequencer.emit({ type: "session_error", code: "internal", message: "internal error", retryable: true });
    } finally {
      this.#interrupting = false;
    }
  }

  /** A turn cut by a shutdown: `SessionError{interrupted}`, then its turn_complete as `error`. */
  #asInterrupted(event: TurnComplete): TurnComplete {
    this.#sequencer.emit({ type: "session_error", code: "interrupted", message: INTERRUPTED, retryable: true });
    const record: TurnRecord = { ...event.record, stopReason: "error", error: { code: "interrupted", message: INTERRUPTED, retryable: true } };
    return { ...event, stopReason: "error", record };
  }

  /**
   * Stores the turn with every event since the last flush, its own turn_complete included,
   * and the session's state, in one write; only then is turn_complete delivered (see
   * `Sequencer.release`).
   */
  async #complete(event: TurnComplete): Promise<TurnRecord> {
    this.#sequencer.flush();
    this.#running = undefined;
    this.#usage = addUsage(this.#usage, event.usage);
    const completed = this.#sequencer.hold(event);
    const record: TurnRecord = { ...event.record, turn: this.#current };
    const stored = await this.#writer.storeTurn(record, completed);
    this.#deps.metrics.turnCompleted(record);
    this.#sequencer.release(completed, event, stored);
    const { usage, stopReason } = record;
    this.#deps.log.debug?.(
      { sessionId: this.#sessionId, turn: record.turn, stopReason, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens },
      "turn ended",
    );
    return record;
  }

  /**
   * Records the turn a crashed process was running as interrupted, like a turn cut by a
   * shutdown: `SessionError{interrupted}`, then its `turn_complete{error}`, stored as a turn
   * (its user message, no answer). Once, at the session's first attach or request here.
   */
  async recordCutTurn(): Promise<void> {
    const cut = this.#cutTurn;
    if (!cut || this.#ending()) return this.#cutRecording;
    this.#cutTurn = undefined;
    const event = cutTurnComplete(cut);
    const turn = this.#track(
      Promise.resolve()
        .then(async () => {
          this.#number(cut.turn);
          await this.#complete(this.#asInterrupted(event));
        })
        .catch((err: unknown) => this.#deps.log.error({ err, sessionId: this.#sessionId }, "could not record the cut turn")),
    );
    this.#cutRecording = turn.finally(() => {
      this.#cutRecording = undefined;
    });
    await turn;
  }
}

/** The end of a turn nothing is known of beyond its start: no answer, no usage. */
function cutTurnComplete(cut: RunningTurnInfo): TurnComplete {
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
    costUsd: 0,
    stopReason: "cancelled",
    compactions: 0,
    startedAt: cut.startedAt,
    endedAt: Date.now(),
  };
  return { type: "turn_complete", messageId: cut.messageId, usage, stopReason: "cancelled", record };
}
