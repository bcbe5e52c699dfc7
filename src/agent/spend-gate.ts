import { RozError } from "../errors/index.ts";
import { costOf, emptyUsage } from "../models/index.ts";
import { callModel, type ModelCallInput, type ModelCallResult, modelCallCompleted } from "./model-call.ts";
import type { SpendAdmission, SpendGate } from "./spend.ts";

export type { SpendGate } from "./spend.ts";
import type { AgentEvent } from "./types.ts";

/** The error of a call refused by a budget; the loop ends the turn with `budget_exceeded`. */
export const isBudgetRefusal = (error: unknown): boolean => error instanceof RozError && error.reason === "budget_exceeded";

/**
 * One model call within the budgets of `gate` (none: always made): asks the gate, makes the call
 * only when admitted, settles what it used, and emits its `model_call_completed`. The call's
 * cost is computed here from its usage and the model's price, also without a gate. A refused
 * call returns `end.failed` with a `budget_exceeded` error, no output and no usage, and emits
 * nothing: the provider was not called.
 */
export async function callWithinBudget(input: ModelCallInput, gate: SpendGate | undefined, emit: (event: AgentEvent) => void): Promise<ModelCallResult> {
  const price = input.model.price;
  let admission: SpendAdmission | undefined;
  if (gate !== undefined) {
    const inputTokens = input.tokens.messages(input.messages);
    admission = await gate.admit({ model: input.model.name, inputTokens, inputCostUsd: (inputTokens * (price?.input ?? 0)) / 1_000_000 });
    if ("refused" in admission) {
      const error = new RozError("budget_exceeded", admission.refused);
      return { text: "", thinking: "", toolCalls: [], usage: emptyUsage(), costUsd: 0, end: { kind: "failed", error } };
    }
  }
  const startedAt = performance.now();
  const result = await callModel(input);
  emit(modelCallCompleted(input.model, result, performance.now() - startedAt));
  const costUsd = costOf(result.usage, price);
  if (admission !== undefined && "settle" in admission) await admission.settle({ usage: result.usage, costUsd });
  return { ...result, costUsd };
}
