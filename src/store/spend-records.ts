/**
 * What the store keeps of spend and budgets (§13): a tenant's monthly limits and spend, and the
 * admission of each model call against them and its session's budgets.
 */
import type { MonthlyBudget, Spent } from "../domain/index.ts";

export type { MonthlyBudget, Spent } from "../domain/index.ts";
export { monthOf } from "../domain/index.ts";

/** A tenant's monthly limits to change: a number sets one, `null` clears it, absent keeps it. */
export interface MonthlyBudgetPatch {
  monthlyTokens?: number | null;
  monthlyCostUsd?: number | null;
}

/** A model call about to be made, to admit against the budgets. */
export interface SpendRequest {
  tenantId: string;
  /** The session it counts toward (a team worker's: its parent's); its budget and its environment's apply. */
  sessionId?: string;
  /** What the call takes at least (its prompt): held against the budgets until it is settled or `expiresAt`. */
  hold: Spent;
  expiresAt: number;
}

/** Admitted (`holdId` when something was held, to settle) or refused with the spent limit in words. */
export type SpendDecision = { admitted: true; month: string; holdId?: string } | { admitted: false; reason: string };

/** What an admitted call used, to count. */
export interface SpendSettlement {
  tenantId: string;
  sessionId?: string;
  /** The month it was admitted in (`SpendDecision.month`): a call counts toward the month it started in. */
  month: string;
  holdId?: string;
  spent: Spent;
}

export interface SpendStore {
  /** The tenant's monthly limits (none set: `{}`). */
  getTenantBudget(tenantId: string): Promise<MonthlyBudget>;
  /** Changes the tenant's monthly limits and returns them. */
  setTenantBudget(tenantId: string, patch: MonthlyBudgetPatch): Promise<MonthlyBudget>;
  /** What the tenant spent in `month` (`YYYY-MM`, UTC), settled calls only. */
  tenantSpend(tenantId: string, month: string): Promise<Spent>;
  /**
   * Check-and-reserve, in ONE transaction that holds the tenant's month row: the call is
   * refused when what the tenant spent this month, or the session over its life, plus what
   * admitted calls still hold, has reached a limit (the tenant's monthly ones; the lower of the
   * session's own and its environment's). Otherwise it is admitted, holding `hold` while any
   * limit applies, so that calls admitted at once on any number of nodes see each other.
   * Expired holds are dropped. Without any limit nothing is written.
   */
  admitSpend(request: SpendRequest, now?: number): Promise<SpendDecision>;
  /**
   * Counts what an admitted call used toward its tenant's month and its session's life and
   * releases its hold, in ONE transaction (atomic increments: concurrent settlements add up).
   */
  settleSpend(settlement: SpendSettlement): Promise<void>;
}
