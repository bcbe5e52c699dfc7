import type { Migration } from "./migration.ts";

/**
 * Spend and budgets (§13). Costs are USD as DOUBLE PRECISION. Turns, sessions, tasks and workers
 * get the cost of their usage; a session its start budget (`budget`, JSON `{maxTokens?,
 * maxCostUsd?}`) and what it spent over its life, its team workers' calls included
 * (`spent_*`); an environment its budget. A tenant's monthly limits are `tenant_budgets`; its
 * spend per calendar month (UTC, `YYYY-MM`) is `tenant_spend`, incremented as each model call
 * ends. `spend_holds` are calls admitted and not yet settled: a check counts them, so nodes
 * admitting calls at once cannot all spend the last of a budget.
 */
export const spend: Migration = {
  version: 13,
  name: "spend",
  statements: () => [
    `ALTER TABLE turns ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0`,
    `ALTER TABLE sessions ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0`,
    `ALTER TABLE sessions ADD COLUMN budget TEXT`,
    `ALTER TABLE sessions ADD COLUMN spent_tokens BIGINT NOT NULL DEFAULT 0`,
    `ALTER TABLE sessions ADD COLUMN spent_cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0`,
    `ALTER TABLE environments ADD COLUMN budget TEXT`,
    `ALTER TABLE tasks ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0`,
    `ALTER TABLE workers ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0`,
    `CREATE TABLE tenant_budgets (
      tenant_id TEXT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
      monthly_tokens BIGINT,
      monthly_cost_usd DOUBLE PRECISION,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE TABLE tenant_spend (
      tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      month TEXT NOT NULL,
      tokens BIGINT NOT NULL DEFAULT 0,
      cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
      PRIMARY KEY (tenant_id, month)
    )`,
    `CREATE TABLE spend_holds (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      month TEXT NOT NULL,
      session_id TEXT,
      tokens BIGINT NOT NULL,
      cost_usd DOUBLE PRECISION NOT NULL,
      expires_at BIGINT NOT NULL
    )`,
    `CREATE INDEX spend_holds_by_tenant ON spend_holds (tenant_id, month)`,
    `CREATE INDEX spend_holds_by_session ON spend_holds (session_id)`,
  ],
};
