import type { ModelMessage } from "../models/index.ts";
import { buildUserMessage } from "./prompt.ts";
import type { PlannedCall } from "./tool-gate.ts";
import { toolDenied, type DispatchedCall } from "./tool-dispatch.ts";
import { assistantMessage, toolResultMessage } from "./turn-messages.ts";
import type { TurnTally } from "./turn-tally.ts";
import type { AgentEvent, SteerInput, TurnInput } from "./types.ts";

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

  /**
   * Takes the messages steered into the turn since it last looked and adds them after
   * everything the turn added so far: inside the last message when that is the user's (tool
   * results), so roles keep alternating; then published. True when there were any.
   */
  joinSteers(input: TurnInput, supportsImages: boolean, emit: (event: AgentEvent) => void): boolean {
    const steers = input.steers?.take() ?? [];
    if (steers.length === 0) return false;
    this.#addSteers(steers, supportsImages);
    for (const s of steers) emit({ type: "steered", messageId: s.messageId, content: s.content, turnMessageId: input.messageId });
    return true;
  }

  #addSteers(steers: readonly SteerInput[], supportsImages: boolean): void {
    for (const steer of steers) {
      const message = buildUserMessage(steer.content, steer.context, supportsImages);
      const last = this.#messages.at(-1);
      if (last?.role === "user") this.#messages[this.#messages.length - 1] = { role: "user", parts: [...last.parts, ...message.parts] };
      else this.#messages.push(message);
      this.#tally.addSteer(steer);
    }
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
