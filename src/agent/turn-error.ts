import { RozError } from "../errors/index.ts";
import { isBudgetRefusal } from "./spend-gate.ts";
import type { TurnRecord } from "./types.ts";

/** The errors the loop itself ends a turn with (`interrupted` is set by the session layer). */
export type TurnError = NonNullable<TurnRecord["error"]> & { code: "model_error" | "agent_error" | "budget_exceeded" };

/** What the client is told when the agent's own code failed (the cause goes to `onAgentError`). */
export const AGENT_FAILURE: Readonly<TurnError> = Object.freeze({ code: "agent_error", message: "the agent failed", retryable: false });

/** A failed model call as the client sees it; `retryable` comes from the provider error. */
export function modelError(err: unknown): TurnError {
  if (err instanceof RozError) return { code: "model_error", message: err.message, retryable: err.retryable };
  const retryable = typeof err === "object" && err !== null && "retryable" in err && err.retryable === true;
  return { code: "model_error", message: "the model call failed", retryable };
}

/**
 * How a turn ends when a model call failed: `budget_exceeded` when a budget refused the call
 * (§13: `SessionError{budget_exceeded, retryable:false}` + `turn_complete{budget_exceeded}`),
 * else `error` with the provider's `model_error`.
 */
export function callFailure(err: unknown): { stopReason: "error" | "budget_exceeded"; error: TurnError } {
  if (isBudgetRefusal(err)) return { stopReason: "budget_exceeded", error: { code: "budget_exceeded", message: (err as RozError).message, retryable: false } };
  return { stopReason: "error", error: modelError(err) };
}
