/** The agent's port to budgets and spend (§13): implemented by the composition root over the store. */
import type { TokenUsage } from "../models/index.ts";

/** What a model call is about to cost, as far as it is known before it is made. */
export interface SpendCall {
  /** Canonical `provider/model`. */
  model: string;
  /** The prompt's messages as the tokenizer counts them (system and tools left out). */
  inputTokens: number;
  /** `inputTokens` at the model's input price. */
  inputCostUsd: number;
}

/** What one admitted call used, its cost included. */
export interface CallSpend {
  usage: TokenUsage;
  costUsd: number;
}

/** The answer to a call: refused (it is not made; `reason` for the client), or admitted until `settle`. */
export type SpendAdmission = { refused: string } | { settle(spent: CallSpend): Promise<void> };

/**
 * Budgets and spend of one agent's model calls (a session's, or a team worker's, which count
 * toward its parent session and its tenant). `admit` runs before every model call; a call it
 * admits is settled exactly once, after it ended however it ended. Neither throws: a gate that
 * cannot reach its counters admits (and logs), it does not end turns.
 */
export interface SpendGate {
  admit(call: SpendCall): Promise<SpendAdmission>;
}
