import { describe, expect, it } from "vitest";
import { monthOf, openStore, type SpendDecision, type Store } from "../../../src/store/index.ts";
import type { SuiteContext } from "../conformance.ts";
import { turnFor } from "../fixtures.ts";

const HOUR = 3_600_000;
const hold = (tokens: number, costUsd = 0) => ({ hold: { tokens, costUsd }, expiresAt: Date.now() + HOUR });
const admitted = (d: SpendDecision) => d.admitted;

/** A session of `tenantId` (its environment's budget and its own as given). */
async function sessionWith(store: Store, tenantId: string, budgets: { session?: object; environment?: object } = {}) {
  const env = await store.createEnvironment(tenantId, { name: `env-${Math.random()}`, ...(budgets.environment ? { budget: budgets.environment } : {}) });
  return store.createSession(tenantId, { environmentId: env.id, model: "scripted/default", ...(budgets.session ? { budget: budgets.session } : {}) });
}

export function spendSuite(ctx: SuiteContext): void {
  describe("spend and budgets", () => {
    it("a tenant's monthly limits are set, kept, cleared; its month's spend adds up settled calls", async () => {
      const store = ctx.store();
      const tenant = await ctx.tenant();
      expect(await store.getTenantBudget(tenant.id)).toEqual({});
      expect(await store.setTenantBudget(tenant.id, { monthlyTokens: 1000 })).toEqual({ monthlyTokens: 1000 });
      expect(await store.setTenantBudget(tenant.id, { monthlyCostUsd: 2.5 })).toEqual({ monthlyTokens: 1000, monthlyCostUsd: 2.5 });
      expect(await store.setTenantBudget(tenant.id, { monthlyTokens: null })).toEqual({ monthlyCostUsd: 2.5 });
      const month = monthOf(Date.now());
      expect(await store.tenantSpend(tenant.id, month)).toEqual({ tokens: 0, costUsd: 0 });
      await Promise.all([
        store.settleSpend({ tenantId: tenant.id, month, spent: { tokens: 100, costUsd: 0.25 } }),
        store.settleSpend({ tenantId: tenant.id, month, spent: { tokens: 50, costUsd: 0.125 } }),
      ]);
      expect(await store.tenantSpend(tenant.id, month)).toEqual({ tokens: 150, costUsd: 0.375 });
      expect(await store.tenantSpend(tenant.id, "1999-01")).toEqual({ tokens: 0, costUsd: 0 });
    });

    it("without any limit every call is admitted and nothing is held; a session counts its calls", async () => {
      const store = ctx.store();
      const tenant = await ctx.tenant();
      const session = await sessionWith(store, tenant.id);
      const decision = await store.admitSpend({ tenantId: tenant.id, sessionId: session.id, ...hold(10) });
      expect(decision).toEqual({ admitted: true, month: monthOf(Date.now()) });
      await store.settleSpend({ tenantId: tenant.id, sessionId: session.id, month: monthOf(Date.now()), spent: { tokens: 30, costUsd: 0.5 } });
      expect((await store.getSession(tenant.id, session.id))?.spent).toEqual({ tokens: 30, costUsd: 0.5 });
    });

    it("a spent monthly limit refuses the call; raising it admits again", async () => {
      const store = ctx.store();
      const tenant = await ctx.tenant();
      const month = monthOf(Date.now());
      await store.setTenantBudget(tenant.id, { monthlyTokens: 100 });
      await store.settleSpend({ tenantId: tenant.id, month, spent: { tokens: 100, costUsd: 0 } });
      const refused = await store.admitSpend({ tenantId: tenant.id, ...hold(1) });
      expect(refused).toEqual({ admitted: false, reason: expect.stringMatching(/tenant's monthly token budget is spent \(100 of 100 tokens\)/) });
      await store.setTenantBudget(tenant.id, { monthlyTokens: 101 });
      expect(await store.admitSpend({ tenantId: tenant.id, ...hold(1) })).toMatchObject({ admitted: true, holdId: expect.any(String) });
      await store.setTenantBudget(tenant.id, { monthlyTokens: null, monthlyCostUsd: 0.5 });
      await store.settleSpend({ tenantId: tenant.id, month, spent: { tokens: 1, costUsd: 0.5 } });
      expect(await store.admitSpend({ tenantId: tenant.id, ...hold(1) })).toMatchObject({ admitted: false, reason: expect.stringMatching(/cost budget/) });
    });

    it("a held call counts until it is settled: of calls admitted at once only those the rest of the budget allows go ahead", async () => {
      const store = ctx.store();
      const tenant = await ctx.tenant();
      await store.setTenantBudget(tenant.id, { monthlyTokens: 10 });
      const first = await store.admitSpend({ tenantId: tenant.id, ...hold(10) });
      expect(first.admitted).toBe(true);
      expect(await store.admitSpend({ tenantId: tenant.id, ...hold(10) })).toMatchObject({ admitted: false });
      // Settled with less than it held: the rest of the budget is free again.
      await store.settleSpend({
        tenantId: tenant.id,
        month: monthOf(Date.now()),
        holdId: (first as { holdId: string }).holdId,
        spent: { tokens: 4, costUsd: 0 },
      });
      expect(await store.admitSpend({ tenantId: tenant.id, ...hold(1) })).toMatchObject({ admitted: true });
      // An expired hold (its node died before settling) no longer counts.
      const other = await ctx.tenant();
      await store.setTenantBudget(other.id, { monthlyTokens: 10 });
      expect((await store.admitSpend({ tenantId: other.id, hold: { tokens: 10, costUsd: 0 }, expiresAt: Date.now() - 1 })).admitted).toBe(true);
      expect((await store.admitSpend({ tenantId: other.id, ...hold(10) })).admitted).toBe(true);
    });

    it("a session's budget and its environment's: the lower limit of each applies, over the session's life", async () => {
      const store = ctx.store();
      const tenant = await ctx.tenant();
      const month = monthOf(Date.now());
      const session = await sessionWith(store, tenant.id, { session: { maxTokens: 100, maxCostUsd: 5 }, environment: { maxTokens: 500, maxCostUsd: 1 } });
      expect((await store.getSession(tenant.id, session.id))?.budget).toEqual({ maxTokens: 100, maxCostUsd: 5 });
      await store.settleSpend({ tenantId: tenant.id, sessionId: session.id, month, spent: { tokens: 99, costUsd: 0.5 } });
      expect((await store.admitSpend({ tenantId: tenant.id, sessionId: session.id, ...hold(0) })).admitted).toBe(true);
      await store.settleSpend({ tenantId: tenant.id, sessionId: session.id, month, spent: { tokens: 1, costUsd: 0 } });
      expect(await store.admitSpend({ tenantId: tenant.id, sessionId: session.id, ...hold(0) })).toMatchObject({
        admitted: false,
        reason: expect.stringMatching(/session's token budget is spent \(100 of 100 tokens\)/),
      });
      // Another session of the tenant is not touched by it; the environment's cost limit is the lower one.
      const sibling = await sessionWith(store, tenant.id, { environment: { maxCostUsd: 1 } });
      await store.settleSpend({ tenantId: tenant.id, sessionId: sibling.id, month, spent: { tokens: 1, costUsd: 1 } });
      expect(await store.admitSpend({ tenantId: tenant.id, sessionId: sibling.id, ...hold(0) })).toMatchObject({
        reason: expect.stringMatching(/cost budget/),
      });
      expect((await store.admitSpend({ tenantId: tenant.id, ...hold(0) })).admitted).toBe(true);
    });

    it("turns carry their cost, and the session sums it", async () => {
      const store = ctx.store();
      const tenant = await ctx.tenant();
      const session = await sessionWith(store, tenant.id);
      await store.appendTurn(tenant.id, session.id, turnFor(1, { costUsd: 0.25 }));
      await store.appendTurn(tenant.id, session.id, turnFor(2, { costUsd: 0.5 }));
      expect((await store.listTurns(tenant.id, session.id))?.map((t) => t.costUsd)).toEqual([0.25, 0.5]);
      expect((await store.getSession(tenant.id, session.id))?.costUsd).toBe(0.75);
    });

    it.runIf(ctx.harness.concurrentStores)("nodes admitting calls at once for the last of a budget: exactly one goes ahead", async () => {
      const tenant = await ctx.tenant();
      await ctx.store().setTenantBudget(tenant.id, { monthlyTokens: 1 });
      const nodes = await Promise.all([openStore(ctx.settings()), openStore(ctx.settings()), openStore(ctx.settings())]);
      try {
        const decisions = await Promise.all(Array.from({ length: 12 }, (_, i) => nodes[i % nodes.length]!.admitSpend({ tenantId: tenant.id, ...hold(5) })));
        expect(decisions.filter(admitted)).toHaveLength(1);
      } finally {
        await Promise.all(nodes.map((n) => n.close()));
      }
    });
  });
}
