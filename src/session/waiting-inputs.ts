import type { AgentMode, ClientTool, ContextBlock, TraceContext } from "../agent/index.ts";
import type { InputDelivery } from "./types.ts";

/**
 * A user message that waits: to start its own turn (queued, or an interrupt about to run),
 * or to join the running one (a steer the model has not seen yet). Part of the session's
 * state: stored with it, so that it survives a restart and a change of node.
 */
export interface WaitingInput {
  messageId: string;
  content: string;
  context: ContextBlock[];
  mode: AgentMode;
  tools?: ClientTool[];
  systemContext?: string;
  delivery: InputDelivery;
  /** The client's trace context: the turn the message starts is traced as its child. */
  trace?: TraceContext;
}

/** A waiting message as REST shows it (`queued_inputs`); `queuePosition` is 0 for all but queued ones. */
export interface WaitingInputView {
  messageId: string;
  content: string;
  delivery: InputDelivery;
  queuePosition: number;
}

/**
 * The messages of one session that wait, in the order they will be taken: interrupts first
 * (each starts the next turn, ahead of the queue), then steers the running turn has not taken
 * (they start the next turn if it ends without them), then the queue (FIFO).
 */
export class WaitingInputs {
  #interrupts: WaitingInput[] = [];
  #steers: WaitingInput[] = [];
  #queue: WaitingInput[] = [];

  constructor(restored: readonly WaitingInput[] = []) {
    for (const input of restored) this.add(input);
  }

  get size(): number {
    return this.#interrupts.length + this.#steers.length + this.#queue.length;
  }

  /** The queued messages, 1 = next to start. */
  get queue(): readonly WaitingInput[] {
    return this.#queue;
  }

  add(input: WaitingInput): void {
    this.#listOf(input.delivery).push(input);
  }

  /** The steers the running turn has not taken yet, taken now (they join it). */
  takeSteers(): WaitingInput[] {
    const steers = this.#steers;
    this.#steers = [];
    return steers;
  }

  /** The message that starts the next turn; `movedUp` says whether the queue's places changed. */
  next(): { input: WaitingInput; movedUp: boolean } | undefined {
    const input = this.#interrupts.shift() ?? this.#steers.shift();
    if (input !== undefined) return { input, movedUp: false };
    const queued = this.#queue.shift();
    return queued === undefined ? undefined : { input: queued, movedUp: this.#queue.length > 0 };
  }

  /** Every waiting message, removed. */
  clear(): WaitingInput[] {
    const all = this.all();
    this.#interrupts = [];
    this.#steers = [];
    this.#queue = [];
    return all;
  }

  /** Every waiting message in the order it will be taken (what the session's state stores). */
  all(): WaitingInput[] {
    return [...this.#interrupts, ...this.#steers, ...this.#queue];
  }

  view(): WaitingInputView[] {
    return this.all().map((input) => ({
      messageId: input.messageId,
      content: input.content,
      delivery: input.delivery,
      queuePosition: input.delivery === "queue" ? this.#queue.indexOf(input) + 1 : 0,
    }));
  }

  #listOf(delivery: InputDelivery): WaitingInput[] {
    return delivery === "interrupt" ? this.#interrupts : delivery === "steer" ? this.#steers : this.#queue;
  }
}
