import { addUsage, emptyUsage, type TokenUsage } from "../models/index.ts";
import type { StopReason, ToolCallRecord, TurnInput, TurnRecord } from "./types.ts";

/**
 * Accumulates the record of one turn as it runs: assistant text and thinking of every
 * model call, every tool call, usage of every model call (also partial ones), and the
 * number of compactions. Owned by the loop of that turn only.
 */
export class TurnTally {
  readonly #input: TurnInput;
  readonly #startedAt: number;
  #text = "";
  #thinking = "";
  #toolCalls: ToolCallRecord[] = [];
  #usage: TokenUsage = emptyUsage();
  #compactions = 0;

  constructor(input: TurnInput, startedAt: number) {
    this.#input = input;
    this.#startedAt = startedAt;
  }

  get usage(): TokenUsage {
    return this.#usage;
  }

  addModelOutput(text: string, thinking: string, usage: TokenUsage): void {
    this.#text = joinChunks(this.#text, text);
    this.#thinking = joinChunks(this.#thinking, thinking);
    this.#usage = addUsage(this.#usage, usage);
  }

  addUsage(usage: TokenUsage): void {
    this.#usage = addUsage(this.#usage, usage);
  }

  addToolCalls(records: readonly ToolCallRecord[]): void {
    this.#toolCalls.push(...records);
  }

  addCompactions(n: number): void {
    this.#compactions += n;
  }

  build(stopReason: StopReason, error: TurnRecord["error"], endedAt: number): TurnRecord {
    const input = this.#input;
    return {
      messageId: input.messageId,
      userContent: input.content,
      userContext: input.context,
      mode: input.mode,
      assistantText: this.#text,
      assistantThinking: this.#thinking,
      toolCalls: [...this.#toolCalls],
      usage: { ...this.#usage },
      stopReason,
      ...(error !== undefined ? { error } : {}),
      compactions: this.#compactions,
      startedAt: this.#startedAt,
      endedAt,
    };
  }
}

// The text of successive model calls of a turn, separated as paragraphs.
const joinChunks = (a: string, b: string): string => (a === "" ? b : b === "" ? a : `${a}\n\n${b}`);
