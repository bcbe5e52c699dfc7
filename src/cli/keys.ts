import { parseArgs } from "node:util";
import type { Config } from "../app/config.ts";
import { grantableScopes, issueKey, SCOPES } from "../auth/index.ts";
import { RozError } from "../errors/index.ts";
import type { ApiKey, Store } from "../store/index.ts";
import { tenantArgument } from "./tenant-arg.ts";
import { withStore } from "./with-store.ts";

/** Where a command writes: stdout carries only results (a key, a table), stderr the hints. */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
}

/** The scopes line of `roz keys create`'s help. */
export const SCOPES_HINT = `scopes: ${SCOPES.join(", ")} (default: admin, which implies all)`;

type Values = Record<string, string | undefined>;

/** A usage error: the command table (commands.ts) adds the usage lines. */
const usage = (message: string): never => {
  throw new RozError("invalid_argument", message);
};

const tenantName = (value: string | undefined): string => tenantArgument(value, usage);

const when = (ms: number | undefined): string => (ms === undefined ? "-" : new Date(ms).toISOString());
const state = (k: ApiKey, now: number): string =>
  k.revokedAt !== undefined ? "revoked" : k.expiresAt !== undefined && k.expiresAt <= now ? "expired" : "active";

/** Aligned columns, for humans. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

async function create(store: Store, values: Values, io: CliOutput): Promise<number> {
  const name = tenantName(values["tenant"]);
  const wanted = (values["scopes"] ?? "admin")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  // The operator at the console may grant anything.
  const scopes = grantableScopes({ scopes: ["admin"] }, wanted);
  let expiresAt: number | undefined;
  if (values["expires-in-days"] !== undefined) {
    const days = Number(values["expires-in-days"]);
    if (!Number.isFinite(days) || days <= 0) usage(`--expires-in-days "${values["expires-in-days"]}": expected a positive number`);
    expiresAt = Date.now() + days * 86_400_000;
  }
  const tenant = await store.ensureTenant(name);
  const { key, secret } = await issueKey(store, { tenantId: tenant.id, name: values["name"] ?? "", scopes, ...(expiresAt !== undefined ? { expiresAt } : {}) });
  io.out(secret);
  io.err(
    `created API key ${key.id} for tenant "${tenant.name}" with scopes ${scopes.join(",")}` +
      (expiresAt !== undefined ? `, expiring ${when(expiresAt)}` : "") +
      `.\nIt is shown only this once: store it now. Send it as "authorization: Bearer <key>".`,
  );
  return 0;
}

async function list(store: Store, values: Values, io: CliOutput): Promise<number> {
  const name = tenantName(values["tenant"]);
  const tenant = await store.getTenantByName(name);
  if (!tenant) throw new RozError("not_found", `no tenant named "${name}"`);
  const rows = [["ID", "PREFIX", "NAME", "SCOPES", "CREATED", "LAST USED", "STATE"]];
  const now = Date.now();
  let cursor: string | undefined;
  do {
    const page = await store.listKeys(tenant.id, { limit: 200, ...(cursor ? { cursor } : {}) });
    for (const k of page.items) rows.push([k.id, k.prefix, k.name || "-", k.scopes.join(","), when(k.createdAt), when(k.lastUsedAt), state(k, now)]);
    cursor = page.nextCursor;
  } while (cursor);
  io.out(table(rows));
  return 0;
}

async function revoke(store: Store, values: Values, id: string | undefined, io: CliOutput): Promise<number> {
  const name = tenantName(values["tenant"]);
  if (id === undefined) return usage("the KEY_ID to revoke is required");
  const tenant = await store.getTenantByName(name);
  if (!tenant || !(await store.revokeKey(tenant.id, id))) throw new RozError("not_found", `tenant "${name}" has no API key "${id}"`);
  io.err(`revoked API key ${id} of tenant "${name}"`);
  return 0;
}

/**
 * Runs one `roz keys` command straight on the configured store (ROZ_DATA_DIR or
 * DATABASE_URL), so the first key needs no open endpoint. `args` are the words after the
 * command's name; `positionals` how many of them may be plain words (KEY_ID). Usage errors
 * throw `invalid_argument`, unknown tenants and keys `not_found`.
 */
async function onStore(
  args: string[],
  positionals: number,
  config: Pick<Config, "dataDir" | "databaseUrl">,
  run: (store: Store, values: Values, words: string[]) => Promise<number>,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        tenant: { type: "string" },
        scopes: { type: "string" },
        name: { type: "string" },
        "expires-in-days": { type: "string" },
      },
    });
  } catch (err) {
    return usage((err as Error).message);
  }
  if (parsed.positionals.length > positionals) usage(`unexpected argument "${parsed.positionals.at(-1)}"`);
  return withStore(config, (store) => run(store, parsed.values, parsed.positionals));
}

type KeysConfig = Pick<Config, "dataDir" | "databaseUrl">;

/** `roz keys create`: prints the new secret on stdout (only this once). */
export const keysCreate = (args: string[], config: KeysConfig, io: CliOutput): Promise<number> =>
  onStore(args, 0, config, (store, values) => create(store, values, io));

/** `roz keys list`: the tenant's keys as a table. */
export const keysList = (args: string[], config: KeysConfig, io: CliOutput): Promise<number> =>
  onStore(args, 0, config, (store, values) => list(store, values, io));

/** `roz keys revoke KEY_ID`. */
export const keysRevoke = (args: string[], config: KeysConfig, io: CliOutput): Promise<number> =>
  onStore(args, 1, config, (store, values, words) => revoke(store, values, words[0], io));
