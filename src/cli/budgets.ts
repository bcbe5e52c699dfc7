import { parseArgs } from "node:util";
import type { Config } from "../app/config.ts";
import { RozError } from "../errors/index.ts";
import { type MonthlyBudget, type MonthlyBudgetPatch, monthOf, type Store } from "../store/index.ts";
import type { CliOutput } from "./keys.ts";
import { tenantArgument } from "./tenant-arg.ts";
import { withStore } from "./with-store.ts";

/** A usage error: the command table (commands.ts) adds the usage lines. */
const usage = (message: string): never => {
  throw new RozError("invalid_argument", message);
};

/** `--monthly-tokens` / `--monthly-cost-usd`: a number (whole for tokens), `none` to remove it, absent to keep it. */
function limitArgument(name: string, value: string | undefined, whole: boolean): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === "none") return null;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0 || (whole && !Number.isSafeInteger(n))) {
    usage(`--${name} "${value}": expected ${whole ? "a whole number of tokens" : "a number of USD"}, 0 or more, or none`);
  }
  return n;
}

const limitText = (limit: number | undefined, unit: string): string => (limit === undefined ? "none" : `${limit} ${unit}`);

/** The tenant's limits and this month's spend, one per line, for humans. */
async function describe(store: Store, tenantId: string, name: string, budget: MonthlyBudget): Promise<string> {
  const month = monthOf(Date.now());
  const spent = await store.tenantSpend(tenantId, month);
  return [
    `tenant            ${name}`,
    `month             ${month} (UTC)`,
    `monthly tokens    ${limitText(budget.monthlyTokens, "tokens")} (spent ${spent.tokens})`,
    `monthly cost      ${limitText(budget.monthlyCostUsd, "USD")} (spent ${Math.round(spent.costUsd * 1e6) / 1e6} USD)`,
  ].join("\n");
}

/** `set`'s arguments, checked before the store is opened: a typo touches nothing. */
function setArguments(values: Record<string, string | undefined>): { name: string; patch: MonthlyBudgetPatch } {
  const name = tenantArgument(values["tenant"], usage);
  const monthlyTokens = limitArgument("monthly-tokens", values["monthly-tokens"], true);
  const monthlyCostUsd = limitArgument("monthly-cost-usd", values["monthly-cost-usd"], false);
  if (monthlyTokens === undefined && monthlyCostUsd === undefined) usage("name --monthly-tokens, --monthly-cost-usd or both");
  return {
    name,
    patch: { ...(monthlyTokens !== undefined ? { monthlyTokens } : {}), ...(monthlyCostUsd !== undefined ? { monthlyCostUsd } : {}) },
  };
}

async function set(store: Store, { name, patch }: ReturnType<typeof setArguments>, io: CliOutput): Promise<number> {
  // Like `roz keys create`: a budget may be set before the tenant's first key.
  const tenant = await store.ensureTenant(name);
  const budget = await store.setTenantBudget(tenant.id, patch);
  io.out(await describe(store, tenant.id, tenant.name, budget));
  io.err(`set the monthly budget of tenant "${tenant.name}": it applies from the next model call on, on every node`);
  return 0;
}

async function show(store: Store, name: string, io: CliOutput): Promise<number> {
  const tenant = await store.getTenantByName(name);
  if (!tenant) throw new RozError("not_found", `no tenant named "${name}"`);
  io.out(await describe(store, tenant.id, tenant.name, await store.getTenantBudget(tenant.id)));
  return 0;
}

/**
 * `roz budgets …`: the operator sets and reads tenants' monthly budgets straight in the
 * configured store (ROZ_DATA_DIR or DATABASE_URL); a tenant only reads its own (`GET /v1/budget`).
 * Returns the exit code; usage errors throw `invalid_argument`, unknown tenants `not_found`.
 */
export async function runBudgetsCommand(argv: string[], config: Pick<Config, "dataDir" | "databaseUrl">, io: CliOutput): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { tenant: { type: "string" }, "monthly-tokens": { type: "string" }, "monthly-cost-usd": { type: "string" } },
    });
  } catch (err) {
    return usage((err as Error).message);
  }
  const [command, ...rest] = parsed.positionals;
  if (command !== "set" && command !== "show") return usage(`unknown budgets command "${command ?? ""}"`);
  if (rest.length > 0) usage(`unexpected argument "${rest[0]}"`);
  if (command === "show") {
    if (parsed.values["monthly-tokens"] !== undefined || parsed.values["monthly-cost-usd"] !== undefined) usage("show takes only --tenant");
    const name = tenantArgument(parsed.values.tenant, usage);
    return withStore(config, (store) => show(store, name, io));
  }
  const wanted = setArguments(parsed.values);
  return withStore(config, (store) => set(store, wanted, io));
}
