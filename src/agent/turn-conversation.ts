import type { ModelMessage } from "../models/index.ts";
import type { PlannedCall } from "./tool-gate.ts";
import { toolDenied, type DispatchedCall } from "./tool-dispatch.ts";
import { assistantMessage, toolResultMessage } from "./turn-messages.ts";
import type { TurnTally } from "./turn-tally.ts";
import type { AgentEvent } from "./types.ts";

/**
 * The conversation of one running turn: the history before it, the user's message, and what
 * the turn adds, each addition also counted in the turn's record. `publish` hands it to the
 * agent whenever it is valid again (never with an unanswered tool use).
 */
export class TurnConversation {
  readonly #tally: TurnTally;
  readonly #publish: (history: ModelMessage[]) => void;
  #messages: ModelMessage[];

  constructor(messages: ModelMessage[], tally: TurnTally, publish: (history: ModelMessage[]) => void) {
    this.#messages = messages;
    this.#tally = tally;
    this.#publish = publish;
  }

  /** What the model sees at its next call. */
  get messages(): ModelMessage[] {
    return this.#messages;
  }

  publish(): void {
    this.#publish([...this.#messages]);
  }

  /** Appends a model's reply; the record keeps its thinking as sent back. */
  keepReply(reply: ModelMessage | undefined): void {
    if (reply === undefined) return;
    this.#messages.push(reply);
    this.#tally.addReply(reply);
  }

  /** The assistant message of the observation calls the agent makes itself. */
  addObservation(calls: readonly PlannedCall[]): void {
    this.#messages.push(assistantMessage("", "", undefined, calls)!);
  }

  /** The results of the calls that ran (or were refused), then published. */
  addToolResults(done: readonly DispatchedCall[]): void {
    this.#messages.push(toolResultMessage(done.map((d) => d.result)));
    this.#tally.addToolCalls(done.map((d) => d.record));
    this.publish();
  }

  /** Answers tool uses that will never run, so the history stays valid; then published. */
  closeUnrun(calls: readonly PlannedCall[], message: string, emit: (event: AgentEvent) => void): void {
    if (calls.length > 0) {
      const now = Date.now();
      for (const c of calls) emit(toolDenied(c, "cancelled", message));
      this.#messages.push(toolResultMessage(calls.map((c) => ({ id: c.id, name: c.name, content: message, isError: true }))));
      this.#tally.addToolCalls(
        calls.map((c) => ({ id: c.id, name: c.name, parameters: c.parameters, permission: "cancelled", error: message, startedAt: now, endedAt: now })),
      );
    }
    this.publish();
  }

  /** The history after `applied` compactions; then published. */
  compacted(messages: ModelMessage[], applied: number): void {
    this.#messages = messages;
    this.#tally.addCompactions(applied);
    this.publish();
  }
}
