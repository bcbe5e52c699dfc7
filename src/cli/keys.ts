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

/** The usage text of `roz keys`, printed with `--help` and after every usage error. */
export const KEYS_USAGE = [
  "usage: roz keys create --tenant NAME [--scopes s1,s2] [--name LABEL] [--expires-in-days N]",
  "       roz keys list --tenant NAME",
  "       roz keys revoke --tenant NAME KEY_ID",
  `scopes: ${SCOPES.join(", ")} (default: admin, which implies all)`,
].join("\n");

const usage = (message: string): never => {
  throw new RozError("invalid_argument", `${message}\n${KEYS_USAGE}`);
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

async function create(store: Store, values: Record<string, string | undefined>, io: CliOutput): Promise<number> {
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

async function list(store: Store, values: Record<string, string | undefined>, io: CliOutput): Promise<number> {
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

async function revoke(store: Store, values: Record<string, string | undefined>, id: string | undefined, io: CliOutput): Promise<number> {
  const name = tenantName(values["tenant"]);
  if (id === undefined) return usage("the KEY_ID to revoke is required");
  const tenant = await store.getTenantByName(name);
  if (!tenant || !(await store.revokeKey(tenant.id, id))) throw new RozError("not_found", `tenant "${name}" has no API key "${id}"`);
  io.err(`revoked API key ${id} of tenant "${name}"`);
  return 0;
}

/**
 * `roz keys …`: manages API keys straight in the configured store (ROZ_DATA_DIR or
 * DATABASE_URL), so the first key needs no open endpoint. Returns the exit code; usage
 * errors throw `invalid_argument`, unknown tenants and keys `not_found`.
 */
export async function runKeysCommand(argv: string[], config: Pick<Config, "dataDir" | "databaseUrl">, io: CliOutput): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
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
  const [command, ...rest] = parsed.positionals;
  if (command !== "create" && command !== "list" && command !== "revoke") return usage(`unknown keys command "${command ?? ""}"`);
  if (rest.length > (command === "revoke" ? 1 : 0)) usage(`unexpected argument "${rest.at(-1)}"`);
  return withStore(config, (store) => {
    if (command === "create") return create(store, parsed.values, io);
    if (command === "list") return list(store, parsed.values, io);
    return revoke(store, parsed.values, rest[0], io);
  });
}
