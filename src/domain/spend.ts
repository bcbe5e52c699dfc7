import type { TokenUsage } from "./token-usage.ts";

/** What a model's tokens cost, in USD per million tokens (a providers file's `prices` entry). */
export interface ModelPrice {
  /** Input tokens not served from or written to the prompt cache. */
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * What `usage` cost at `price`, in USD: uncached input (`inputTokens` less the cached ones) at
 * `input`, cache reads at `cacheRead`, cache writes at `cacheWrite`, output at `output`. A model
 * without a price costs 0. The one place a cost is computed from tokens.
 */
export function costOf(usage: TokenUsage, price: ModelPrice | undefined): number {
  if (price === undefined) return 0;
  const uncached = Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheCreationTokens);
  const micro =
    uncached * price.input + usage.cacheReadTokens * price.cacheRead + usage.cacheCreationTokens * price.cacheWrite + usage.outputTokens * price.output;
  return micro / 1_000_000;
}

/** The tokens a budget counts: input (cached ones included) and output. */
export const budgetTokens = (usage: TokenUsage): number => usage.inputTokens + usage.outputTokens;

/** Limits over a session's life; an absent field is no limit. */
export interface Budget {
  maxTokens?: number;
  maxCostUsd?: number;
}

/** Where two budgets both set a limit, the lower one. */
export function lowerBudget(a: Budget | undefined, b: Budget | undefined): Budget {
  const lower = (x: number | undefined, y: number | undefined) => (x === undefined ? y : y === undefined ? x : Math.min(x, y));
  const maxTokens = lower(a?.maxTokens, b?.maxTokens);
  const maxCostUsd = lower(a?.maxCostUsd, b?.maxCostUsd);
  return { ...(maxTokens !== undefined ? { maxTokens } : {}), ...(maxCostUsd !== undefined ? { maxCostUsd } : {}) };
}

/** What one budget or month has spent. */
export interface Spent {
  tokens: number;
  costUsd: number;
}

/** A tenant's limits per calendar month (UTC); an absent field is no limit. */
export interface MonthlyBudget {
  monthlyTokens?: number;
  monthlyCostUsd?: number;
}

/** The calendar month (UTC) of `at`, as `YYYY-MM`: the key of a tenant's monthly spend. */
export const monthOf = (at: number): string => new Date(at).toISOString().slice(0, 7);

/**
 * Which limit `spent` has reached, as words for the client; undefined while none is. A limit
 * is spent once what was spent reaches it (a limit of 0 allows nothing).
 */
export function reachedLimit(spent: Spent, limits: { tokens?: number | undefined; costUsd?: number | undefined }, what: string): string | undefined {
  if (limits.tokens !== undefined && spent.tokens >= limits.tokens) return `${what} token budget is spent (${spent.tokens} of ${limits.tokens} tokens)`;
  if (limits.costUsd !== undefined && spent.costUsd >= limits.costUsd) {
    return `${what} cost budget is spent (${usd(spent.costUsd)} of ${usd(limits.costUsd)} USD)`;
  }
  return undefined;
}

const usd = (n: number): string => String(Math.round(n * 1e6) / 1e6);
