import { randomUUID } from "node:crypto";
import type { JsonObject, PermissionRule } from "../../domain/index.ts";
import type { Environment, EnvironmentPatch, EnvironmentStore, NewEnvironment } from "../types.ts";
import type { Sql, SqlRow, SqlValue } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { listPage } from "./pagination.ts";
import { conflictAs, fromJson, opt, toJson } from "./rows.ts";
import { budgetColumn, budgetField } from "./spend.ts";

const DEFAULT_NAME = "default";
const DEFAULT_KIND = "default";
/** Names tried for a tenant's default environment when `default` belongs to another one. */
const DEFAULT_NAME_ATTEMPTS = 20;
const CONFLICT = "an environment with this name already exists";

const environmentOf = (row: SqlRow): Environment => ({
  id: String(row.id),
  tenantId: String(row.tenant_id),
  name: String(row.name),
  kind: String(row.kind),
  defaultModel: opt(row.default_model as string | null),
  instructions: opt(row.instructions as string | null),
  permissions: fromJson<PermissionRule[]>(row.permissions),
  toolDefaults: fromJson<JsonObject>(row.tool_defaults),
  ...(row.teams_enabled === null || row.teams_enabled === undefined ? {} : { teamsEnabled: Number(row.teams_enabled) === 1 }),
  ...budgetField(row.budget),
  isDefault: Number(row.is_default) === 1,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

/** Patch fields → column assignments; `null` clears, `undefined` keeps. */
function assignments(patch: EnvironmentPatch): [string, SqlValue][] {
  const set: [string, SqlValue][] = [];
  if (patch.name !== undefined) set.push(["name", patch.name]);
  if (patch.kind !== undefined) set.push(["kind", patch.kind]);
  if (patch.defaultModel !== undefined) set.push(["default_model", patch.defaultModel]);
  if (patch.instructions !== undefined) set.push(["instructions", patch.instructions]);
  if (patch.permissions !== undefined) set.push(["permissions", toJson(patch.permissions)]);
  if (patch.toolDefaults !== undefined) set.push(["tool_defaults", toJson(patch.toolDefaults)]);
  if (patch.teamsEnabled !== undefined) set.push(["teams_enabled", patch.teamsEnabled === null ? null : patch.teamsEnabled ? 1 : 0]);
  if (patch.budget !== undefined) set.push(["budget", budgetColumn(patch.budget)]);
  if (patch.isDefault !== undefined) set.push(["is_default", patch.isDefault ? 1 : 0]);
  return set;
}

export function environmentRepo({ db, now }: StoreContext): EnvironmentStore {
  const clearDefault = (tx: Sql, tenantId: string, at: number) =>
    tx.run("UPDATE environments SET is_default = 0, updated_at = ? WHERE tenant_id = ? AND is_default = 1", [at, tenantId]);

  const findDefault = async (q: Sql, tenantId: string) => {
    const row = await q.get("SELECT * FROM environments WHERE tenant_id = ? AND is_default = 1", [tenantId]);
    return row && environmentOf(row);
  };

  return {
    createEnvironment(tenantId, input: NewEnvironment) {
      return conflictAs(db.dialect, CONFLICT, () =>
        db.transaction(async (tx) => {
          const at = now();
          if (input.isDefault) await clearDefault(tx, tenantId, at);
          const row = await tx.get(
            `INSERT INTO environments
               (id, tenant_id, name, kind, default_model, instructions, permissions, tool_defaults, teams_enabled, budget, is_default, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
            [
              randomUUID(),
              tenantId,
              input.name,
              input.kind ?? DEFAULT_KIND,
              input.defaultModel,
              input.instructions,
              toJson(input.permissions ?? []),
              toJson(input.toolDefaults ?? {}),
              input.teamsEnabled === undefined ? null : input.teamsEnabled ? 1 : 0,
              budgetColumn(input.budget),
              input.isDefault ? 1 : 0,
              at,
              at,
            ],
          );
          return environmentOf(row!);
        }),
      );
    },

    async getEnvironment(tenantId, id) {
      const row = await db.get("SELECT * FROM environments WHERE tenant_id = ? AND id = ?", [tenantId, id]);
      return row && environmentOf(row);
    },

    listEnvironments(tenantId, page) {
      return listPage(db, { table: "environments", where: ["tenant_id = ?"], params: [tenantId], page, map: environmentOf });
    },

    updateEnvironment(tenantId, id, patch) {
      return conflictAs(db.dialect, CONFLICT, () =>
        db.transaction(async (tx) => {
          const at = now();
          const set = assignments(patch);
          if (patch.isDefault === true) {
            // Demote the current default unless it is this one (then nothing changes).
            await tx.run("UPDATE environments SET is_default = 0, updated_at = ? WHERE tenant_id = ? AND is_default = 1 AND id <> ?", [at, tenantId, id]);
          }
          const row = await tx.get(
            `UPDATE environments SET ${[...set.map(([column]) => `${column} = ?`), "updated_at = ?"].join(", ")}
             WHERE tenant_id = ? AND id = ? RETURNING *`,
            [...set.map(([, value]) => value), at, tenantId, id],
          );
          // Unknown id: the transaction is rolled back, so a demotion above is undone too.
          if (row === undefined) throw new UnknownEnvironment();
          return environmentOf(row);
        }),
      ).catch((err: unknown) => {
        if (err instanceof UnknownEnvironment) return undefined;
        throw err;
      });
    },

    async deleteEnvironment(tenantId, id) {
      return (await db.run("DELETE FROM environments WHERE tenant_id = ? AND id = ?", [tenantId, id])) > 0;
    },

    findDefaultEnvironment(tenantId) {
      return findDefault(db, tenantId);
    },

    async getDefaultEnvironment(tenantId) {
      const existing = await findDefault(db, tenantId);
      if (existing !== undefined) return existing;
      for (let attempt = 1; attempt <= DEFAULT_NAME_ATTEMPTS; attempt++) {
        const name = attempt === 1 ? DEFAULT_NAME : `${DEFAULT_NAME}-${attempt}`;
        const at = now();
        // The partial unique index allows one default per tenant: a racing insert (from this
        // node or another) does nothing, and everyone reads the winner's row.
        await db.run(
          `INSERT INTO environments
             (id, tenant_id, name, kind, permissions, tool_defaults, is_default, created_at, updated_at)
           VALUES (?, ?, ?, ?, '[]', '{}', 1, ?, ?) ON CONFLICT DO NOTHING`,
          [randomUUID(), tenantId, name, DEFAULT_KIND, at, at],
        );
        const found = await findDefault(db, tenantId);
        if (found !== undefined) return found;
        // Nothing inserted and still no default: `name` belongs to another environment.
      }
      throw new Error(`no free name for the default environment of tenant ${tenantId}`);
    },
  };
}

/** Aborts an update's transaction when the id matches nothing. */
class UnknownEnvironment extends Error {}
