import type { Agent, SteerInput } from "../agent/index.ts";
import type { StoreWriter } from "./store-writer.ts";
import type { TurnRunner } from "./turn-runner.ts";
import type { InputDelivery, SessionErrorCode, SessionEvent } from "./types.ts";
import { type WaitingInput, WaitingInputs, type WaitingInputView } from "./waiting-inputs.ts";

export interface UserInputsInit {
  agent: Agent;
  turns: TurnRunner;
  writer: StoreWriter;
  emit: (event: SessionEvent) => void;
  /** A non-fatal in-band error answering the message `requestId`. */
  error: (code: SessionErrorCode, message: string, requestId: string) => void;
  /** How many messages may wait at once (ROZ_MAX_QUEUED_INPUTS). */
  maxWaiting: number;
  /** Whether the session is ending (or leaving this process): no turn starts then. */
  ending: () => boolean;
  /** Messages that waited when the session was stored. */
  restored?: readonly WaitingInput[];
}

/**
 * What becomes of each user message (§11): it starts a turn, waits in the queue, joins the
 * running turn (steer) or cancels it to run next (interrupt); v0.2's `turn_in_progress`
 * stands without a delivery. Every attached stream is told with `input_update`s, and the
 * waiting messages are stored with the session's state whenever they change.
 */
export class UserInputs {
  readonly #init: UserInputsInit;
  readonly #waiting: WaitingInputs;

  constructor(init: UserInputsInit) {
    this.#init = init;
    this.#waiting = new WaitingInputs(init.restored);
  }

  /** The waiting messages, in the order they will be taken (stored with the session's state). */
  all(): WaitingInput[] {
    return this.#waiting.all();
  }

  view(): WaitingInputView[] {
    return this.#waiting.view();
  }

  submit(input: WaitingInput | Omit<WaitingInput, "delivery">): void {
    const { turns, error, maxWaiting } = this.#init;
    this.resume();
    if (!turns.running) return this.#start(input);
    const delivery: InputDelivery | undefined = "delivery" in input ? input.delivery : undefined;
    if (delivery === undefined) {
      return error("turn_in_progress", "a turn is already running; wait for turn_complete, cancel it, or send the message with a delivery", input.messageId);
    }
    if (this.#waiting.size >= maxWaiting) {
      return error("resource_exhausted", `${maxWaiting} messages already wait in this session; wait for a turn to end`, input.messageId);
    }
    this.#waiting.add({ ...input, delivery });
    if (delivery === "queue") this.#emitPlace(input.messageId, this.#waiting.queue.length);
    this.#init.writer.storeState();
    if (delivery === "interrupt") this.#init.agent.cancelTurn("interrupted by a new message");
  }

  /** Starts the next waiting message when no turn runs (after a turn, at an attach after a restart). */
  resume(): void {
    const { turns, ending } = this.#init;
    if (turns.running || ending()) return;
    const next = this.#waiting.next();
    if (next === undefined) return;
    this.#start(next.input);
    if (next.movedUp) this.#waiting.queue.forEach((queued, i) => this.#emitPlace(queued.messageId, i + 1));
  }

  /** Drops every waiting message (`cancel_turn{clear_queue}`, `cancel_session`), each with `dropped`. */
  dropAll(): void {
    const dropped = this.#waiting.clear();
    if (dropped.length === 0) return;
    for (const input of dropped) this.#init.emit({ type: "input_update", messageId: input.messageId, state: "dropped" });
    this.#init.writer.storeState();
  }

  #start(input: Omit<WaitingInput, "delivery">): void {
    const { messageId, content, context, mode, tools, systemContext } = input;
    this.#init.emit({ type: "input_update", messageId, state: "started", content });
    this.#init.turns.start(
      {
        messageId,
        content,
        context,
        mode,
        ...(tools ? { tools } : {}),
        ...(systemContext !== undefined ? { systemContext } : {}),
        steers: { take: () => this.#takeSteers() },
      },
      input.trace,
    );
  }

  /** The running turn takes the steers that wait (the turn runner stores the state once the model saw them). */
  #takeSteers(): SteerInput[] {
    return this.#waiting.takeSteers().map(({ messageId, content, context }) => ({ messageId, content, context }));
  }

  #emitPlace(messageId: string, queuePosition: number): void {
    this.#init.emit({ type: "input_update", messageId, state: "queued", queuePosition });
  }
}
