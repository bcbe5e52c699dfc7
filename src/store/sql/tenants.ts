import { randomUUID } from "node:crypto";
import type { Tenant, TenantStore } from "../types.ts";
import type { SqlRow } from "./database.ts";
import type { StoreContext } from "./context.ts";

export const tenantOf = (row: SqlRow): Tenant => ({
  id: String(row.id),
  name: String(row.name),
  createdAt: Number(row.created_at),
});

export function tenantRepo({ db, now }: StoreContext): TenantStore {
  const getTenantByName = async (name: string) => {
    const row = await db.get("SELECT * FROM tenants WHERE name = ?", [name]);
    return row && tenantOf(row);
  };
  return {
    async ensureTenant(name) {
      // Insert-or-nothing, then read: concurrent callers (and nodes) all end up with the one row.
      await db.run("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING", [randomUUID(), name, now()]);
      const tenant = await getTenantByName(name);
      if (tenant === undefined) throw new Error(`tenant ${name} vanished after insert`);
      return tenant;
    },
    async getTenant(id) {
      const row = await db.get("SELECT * FROM tenants WHERE id = ?", [id]);
      return row && tenantOf(row);
    },
    getTenantByName,
  };
}
