import type { FastifyBaseLogger } from "fastify";
import type { CallSpend, SpendAdmission, SpendCall, SpendGate } from "../agent/index.ts";
import { budgetTokens } from "../models/index.ts";
import { monthOf, type Store } from "../store/index.ts";
import type { Metrics } from "./metrics.ts";

/** How long an admitted call holds its share of a budget when it is never settled (its node died). */
const HOLD_MS = 30 * 60_000;

/** Whose calls a gate meters: a tenant's, and the session they count toward (a worker's: its parent's). */
export interface SpendOwner {
  tenantId: string;
  sessionId?: string;
}

/** The budgets and spend of every model call of this node (§13), counted in the store so that every node sees them. */
export interface SpendMeter {
  gate(owner: SpendOwner): SpendGate;
}

/**
 * Meters model calls through the store: each call is admitted against the tenant's monthly
 * limits and its session's budgets (`Store.admitSpend`, one check-and-reserve transaction), and
 * what it used is counted once it ended (`settleSpend`) and in `roz_cost_usd_total`. A store that
 * cannot be reached admits the call (logged): a budget check never fails a turn on its own.
 */
export function createSpendMeter(store: Pick<Store, "admitSpend" | "settleSpend" | "getTenant">, metrics: Metrics, log: FastifyBaseLogger): SpendMeter {
  const names = new Map<string, Promise<string>>();
  const tenantName = (tenantId: string): Promise<string> => {
    let name = names.get(tenantId);
    if (name === undefined) {
      name = store.getTenant(tenantId).then(
        (tenant) => tenant?.name ?? tenantId,
        () => tenantId,
      );
      names.set(tenantId, name);
    }
    return name;
  };

  const settler =
    (owner: SpendOwner, call: SpendCall, month: string, holdId: string | undefined) =>
    async ({ usage, costUsd }: CallSpend): Promise<void> => {
      metrics.costSpent(await tenantName(owner.tenantId), call.model, costUsd);
      try {
        await store.settleSpend({ ...owner, month, ...(holdId !== undefined ? { holdId } : {}), spent: { tokens: budgetTokens(usage), costUsd } });
      } catch (err) {
        log.error({ err, ...owner }, "could not count a model call's spend");
      }
    };

  return {
    gate: (owner) => ({
      async admit(call): Promise<SpendAdmission> {
        const now = Date.now();
        try {
          const decision = await store.admitSpend({ ...owner, hold: { tokens: call.inputTokens, costUsd: call.inputCostUsd }, expiresAt: now + HOLD_MS }, now);
          if (!decision.admitted) return { refused: `${decision.reason}: no model call is made until it is raised` };
          return { settle: settler(owner, call, decision.month, decision.holdId) };
        } catch (err) {
          log.error({ err, ...owner }, "could not check the budgets; the model call is made");
          return { settle: settler(owner, call, monthOf(now), undefined) };
        }
      },
    }),
  };
}
