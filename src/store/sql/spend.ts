import { randomUUID } from "node:crypto";
import { type Budget, lowerBudget, type MonthlyBudget, monthOf, reachedLimit, type Spent } from "../../domain/index.ts";
import type { SpendStore } from "../types.ts";
import type { Sql, SqlRow, SqlValue } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { fromJson, optNum, toJson } from "./rows.ts";

/** A budget column (JSON `{maxTokens?, maxCostUsd?}`, NULL for none) → Budget | undefined. */
export const budgetOf = (column: unknown): Budget | undefined => (column === null || column === undefined ? undefined : fromJson<Budget>(column));

/** `{ budget }` from a budget column, `{}` when it holds none (for spreading into a record). */
export function budgetField(column: unknown): { budget?: Budget } {
  const budget = budgetOf(column);
  return budget === undefined ? {} : { budget };
}

/** Budget | undefined → the column's value. */
export const budgetColumn = (budget: Budget | undefined | null): string | null =>
  budget === undefined || budget === null || Object.keys(budget).length === 0 ? null : toJson(budget);

const spentOf = (row: { tokens?: unknown; cost_usd?: unknown } | undefined): Spent => ({
  tokens: Number(row?.tokens ?? 0),
  costUsd: Number(row?.cost_usd ?? 0),
});

const plus = (a: Spent, b: Spent): Spent => ({ tokens: a.tokens + b.tokens, costUsd: a.costUsd + b.costUsd });

const hasLimit = (b: { maxTokens?: number; maxCostUsd?: number; monthlyTokens?: number; monthlyCostUsd?: number }) => Object.keys(b).length > 0;

/** The tenant's monthly limits from a `tenant_budgets` row (absent: none). */
function monthlyOf(row: SqlRow | undefined): MonthlyBudget {
  const monthlyTokens = optNum(row?.monthly_tokens);
  const monthlyCostUsd = optNum(row?.monthly_cost_usd);
  return { ...(monthlyTokens !== undefined ? { monthlyTokens } : {}), ...(monthlyCostUsd !== undefined ? { monthlyCostUsd } : {}) };
}

async function monthlyBudget(q: Sql, tenantId: string): Promise<MonthlyBudget> {
  return monthlyOf(await q.get("SELECT monthly_tokens, monthly_cost_usd FROM tenant_budgets WHERE tenant_id = ?", [tenantId]));
}

/**
 * Every limit a model call meets, in one read: the tenant's monthly ones, and the lower of the
 * session's own budget and its environment's (none for an unknown session or none given).
 */
async function limitsOf(q: Sql, tenantId: string, sessionId: string | undefined): Promise<{ tenant: MonthlyBudget; session: Budget }> {
  const row = await q.get(
    `SELECT tb.monthly_tokens, tb.monthly_cost_usd, s.budget, e.budget AS environment_budget FROM (SELECT 1 AS one) AS x
     LEFT JOIN tenant_budgets tb ON tb.tenant_id = ?
     LEFT JOIN sessions s ON s.id = ? AND s.tenant_id = ?
     LEFT JOIN environments e ON e.id = s.environment_id AND e.tenant_id = s.tenant_id`,
    [tenantId, sessionId ?? null, tenantId],
  );
  return { tenant: monthlyOf(row), session: lowerBudget(budgetOf(row?.budget), budgetOf(row?.environment_budget)) };
}

const noLimits = (limits: { tenant: MonthlyBudget; session: Budget }): boolean => !hasLimit(limits.tenant) && !hasLimit(limits.session);

/** What admitted, unsettled calls hold (`where`: of the tenant's month, or of one session). */
async function held(q: Sql, where: string, params: SqlValue[]): Promise<Spent> {
  return spentOf(await q.get(`SELECT COALESCE(SUM(tokens), 0) AS tokens, COALESCE(SUM(cost_usd), 0) AS cost_usd FROM spend_holds WHERE ${where}`, params));
}

/** Adds to the tenant's month row, creating it; with nothing to add it only takes the row's lock. */
const BUMP_MONTH = `INSERT INTO tenant_spend (tenant_id, month, tokens, cost_usd) VALUES (?, ?, ?, ?)
  ON CONFLICT (tenant_id, month) DO UPDATE SET tokens = tenant_spend.tokens + excluded.tokens, cost_usd = tenant_spend.cost_usd + excluded.cost_usd
  RETURNING tokens, cost_usd`;

export function spendRepo({ db, now }: StoreContext): SpendStore {
  return {
    getTenantBudget: (tenantId) => monthlyBudget(db, tenantId),

    async setTenantBudget(tenantId, patch) {
      return db.transaction(async (tx) => {
        const current = await monthlyBudget(tx, tenantId);
        const next = (value: number | null | undefined, kept: number | undefined) => (value === undefined ? kept : (value ?? undefined));
        const tokens = next(patch.monthlyTokens, current.monthlyTokens);
        const cost = next(patch.monthlyCostUsd, current.monthlyCostUsd);
        await tx.run(
          `INSERT INTO tenant_budgets (tenant_id, monthly_tokens, monthly_cost_usd, updated_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (tenant_id) DO UPDATE SET monthly_tokens = excluded.monthly_tokens, monthly_cost_usd = excluded.monthly_cost_usd, updated_at = excluded.updated_at`,
          [tenantId, tokens ?? null, cost ?? null, now()],
        );
        return monthlyBudget(tx, tenantId);
      });
    },

    async tenantSpend(tenantId, month) {
      return spentOf(await db.get("SELECT tokens, cost_usd FROM tenant_spend WHERE tenant_id = ? AND month = ?", [tenantId, month]));
    },

    async admitSpend(request, at = now()) {
      const { tenantId, sessionId } = request;
      const month = monthOf(at);
      // Most calls meet no limit at all: one read says so, without a transaction.
      if (noLimits(await limitsOf(db, tenantId, sessionId))) return { admitted: true, month };
      return db.transaction(async (tx) => {
        const limits = await limitsOf(tx, tenantId, sessionId);
        if (noLimits(limits)) return { admitted: true, month };
        const { tenant: tenantLimits, session: sessionLimits } = limits;
        // The month row's lock serialises every admission of the tenant: holds are read and written under it.
        const spent = spentOf(await tx.get(BUMP_MONTH, [tenantId, month, 0, 0]));
        await tx.run("DELETE FROM spend_holds WHERE tenant_id = ? AND expires_at <= ?", [tenantId, at]);
        const tenantReason = reachedLimit(
          plus(spent, await held(tx, "tenant_id = ? AND month = ?", [tenantId, month])),
          { tokens: tenantLimits.monthlyTokens, costUsd: tenantLimits.monthlyCostUsd },
          "the tenant's monthly",
        );
        if (tenantReason !== undefined) return { admitted: false, reason: tenantReason };
        if (sessionId !== undefined && hasLimit(sessionLimits)) {
          const life = spentOf(
            await tx.get("SELECT spent_tokens AS tokens, spent_cost_usd AS cost_usd FROM sessions WHERE id = ? AND tenant_id = ?", [sessionId, tenantId]),
          );
          const sessionReason = reachedLimit(
            plus(life, await held(tx, "session_id = ?", [sessionId])),
            { tokens: sessionLimits.maxTokens, costUsd: sessionLimits.maxCostUsd },
            "the session's",
          );
          if (sessionReason !== undefined) return { admitted: false, reason: sessionReason };
        }
        const holdId = randomUUID();
        await tx.run("INSERT INTO spend_holds (id, tenant_id, month, session_id, tokens, cost_usd, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)", [
          holdId,
          tenantId,
          month,
          sessionId ?? null,
          Math.max(0, Math.round(request.hold.tokens)),
          Math.max(0, request.hold.costUsd),
          request.expiresAt,
        ]);
        return { admitted: true, month, holdId };
      });
    },

    async settleSpend({ tenantId, sessionId, month, holdId, spent }) {
      const tokens = Math.max(0, Math.round(spent.tokens));
      const costUsd = Math.max(0, spent.costUsd);
      if (tokens === 0 && costUsd === 0 && holdId === undefined) return;
      await db.batch([
        { sql: BUMP_MONTH, params: [tenantId, month, tokens, costUsd] },
        ...(sessionId !== undefined
          ? [
              {
                sql: "UPDATE sessions SET spent_tokens = spent_tokens + ?, spent_cost_usd = spent_cost_usd + ? WHERE id = ? AND tenant_id = ?",
                params: [tokens, costUsd, sessionId, tenantId],
              },
            ]
          : []),
        ...(holdId !== undefined ? [{ sql: "DELETE FROM spend_holds WHERE id = ?", params: [holdId] }] : []),
      ]);
    },
  };
}
