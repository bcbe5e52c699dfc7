import { principalOf } from "../src/auth/index.ts";
import { monthOf } from "../src/domain/index.ts";
import type { Store } from "../src/store/index.ts";
import { errorResponses, type RoutePlugin } from "./schemas.ts";

export interface BudgetRoutesOptions {
  store: Pick<Store, "getTenantBudget" | "tenantSpend">;
}

const budgetSchema = {
  type: "object",
  properties: {
    month: { type: "string", description: "the calendar month (UTC) counted, YYYY-MM" },
    monthly_tokens: { type: ["integer", "null"], description: "input + output tokens allowed this month; null: no limit" },
    monthly_cost_usd: { type: ["number", "null"], description: "USD allowed this month; null: no limit" },
    spent_tokens: { type: "integer", description: "input + output tokens the tenant's model calls used this month" },
    spent_cost_usd: { type: "number", description: "what they cost, USD" },
  },
  required: ["month", "monthly_tokens", "monthly_cost_usd", "spent_tokens", "spent_cost_usd"],
} as const;

/**
 * `GET /budget` (under `/v1`): the caller's tenant's monthly limits, set by the operator with
 * `roz budgets set`, and what it spent this month. Any key of the tenant may read it.
 */
export const budgetRoutes: RoutePlugin<BudgetRoutesOptions> = async (app, { store }) => {
  app.get(
    "/budget",
    {
      config: { scope: "any" },
      schema: { summary: "The tenant's monthly budget and this month's spend", tags: ["budget"], response: { 200: budgetSchema, ...errorResponses() } },
    },
    async (request) => {
      const { tenantId } = principalOf(request);
      const month = monthOf(Date.now());
      const [budget, spent] = await Promise.all([store.getTenantBudget(tenantId), store.tenantSpend(tenantId, month)]);
      return {
        month,
        monthly_tokens: budget.monthlyTokens ?? null,
        monthly_cost_usd: budget.monthlyCostUsd ?? null,
        spent_tokens: spent.tokens,
        spent_cost_usd: spent.costUsd,
      };
    },
  );
};
