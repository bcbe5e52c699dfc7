import type { ThinkingRecord } from "../domain/index.ts";
import { addUsage, emptyUsage, type ModelMessage, type TokenUsage } from "../models/index.ts";
import type { CallSpend } from "./spend.ts";
import type { SteeredInput, SteerInput, StopReason, ToolCallRecord, TurnInput, TurnRecord } from "./types.ts";

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
  #thinkingBlocks: ThinkingRecord[] = [];
  #toolCalls: ToolCallRecord[] = [];
  #steered: SteeredInput[] = [];
  #usage: TokenUsage = emptyUsage();
  #costUsd = 0;
  #compactions = 0;

  constructor(input: TurnInput, startedAt: number) {
    this.#input = input;
    this.#startedAt = startedAt;
  }

  get usage(): TokenUsage {
    return this.#usage;
  }

  addModelOutput(text: string, thinking: string, spent: CallSpend): void {
    this.#text = joinChunks(this.#text, text);
    this.#thinking = joinChunks(this.#thinking, thinking);
    this.addUsage(spent);
  }

  /** Keeps the thinking of an assistant message the conversation kept, signed as it came. */
  addReply(reply: ModelMessage): void {
    const toolUse = reply.parts.some((p) => p.type === "tool_use");
    for (const part of reply.parts) {
      if (part.type !== "thinking") continue;
      this.#thinkingBlocks.push(part.signature === undefined ? { text: part.thinking, toolUse } : { text: part.thinking, signature: part.signature, toolUse });
    }
  }

  /** What one model call used and cost (also one whose text the turn does not keep: a summary). */
  addUsage(spent: CallSpend): void {
    this.#usage = addUsage(this.#usage, spent.usage);
    this.#costUsd += spent.costUsd;
  }

  addToolCalls(records: readonly ToolCallRecord[]): void {
    this.#toolCalls.push(...records);
  }

  /** A steered message, placed after the tool calls the turn made so far. */
  addSteer(steer: SteerInput): void {
    this.#steered.push({ ...steer, afterToolCalls: this.#toolCalls.length });
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
      assistantThinkingBlocks: [...this.#thinkingBlocks],
      toolCalls: [...this.#toolCalls],
      ...(this.#steered.length > 0 ? { steered: [...this.#steered] } : {}),
      usage: { ...this.#usage },
      costUsd: this.#costUsd,
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
