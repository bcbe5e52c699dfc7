import { randomUUID } from "node:crypto";
import type { ApiKey, KeyStore, NewApiKey } from "../types.ts";
import type { Sql, SqlRow } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { listPage } from "./pagination.ts";
import { conflictAs, fromJson, optNum, toJson } from "./rows.ts";
import { tenantOf } from "./tenants.ts";

/** touchKey writes at most once per this interval per key. */
const TOUCH_INTERVAL_MS = 60_000;

const keyOf = (row: SqlRow): ApiKey => ({
  id: String(row.id),
  tenantId: String(row.tenant_id),
  name: String(row.name),
  prefix: String(row.prefix),
  scopes: fromJson<string[]>(row.scopes),
  createdAt: Number(row.created_at),
  lastUsedAt: optNum(row.last_used_at),
  revokedAt: optNum(row.revoked_at),
  expiresAt: optNum(row.expires_at),
});

export function keyRepo({ db, now }: StoreContext): KeyStore {
  const insertKey = async (q: Sql, input: NewApiKey): Promise<ApiKey> => {
    const row = await q.get(
      `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, scopes, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      [randomUUID(), input.tenantId, input.name, input.prefix, input.hash, toJson(input.scopes), now(), input.expiresAt],
    );
    return keyOf(row!);
  };
  return {
    createKey(input) {
      return conflictAs(db.dialect, "an API key with this hash already exists", () => insertKey(db, input));
    },
    async findKeyByHash(hash, at = now()) {
      const row = await db.get(
        `SELECT k.*, t.name AS tenant_name, t.created_at AS tenant_created_at
         FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
         WHERE k.hash = ? AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?)`,
        [hash, at],
      );
      if (row === undefined) return undefined;
      return {
        key: keyOf(row),
        tenant: tenantOf({ id: row.tenant_id, name: row.tenant_name, created_at: row.tenant_created_at }),
      };
    },
    async getKey(tenantId, id) {
      const row = await db.get("SELECT * FROM api_keys WHERE tenant_id = ? AND id = ?", [tenantId, id]);
      return row && keyOf(row);
    },
    listKeys(tenantId, page) {
      return listPage(db, { table: "api_keys", where: ["tenant_id = ?"], params: [tenantId], page, map: keyOf });
    },
    async revokeKey(tenantId, id) {
      // COALESCE keeps the first revocation time: revoking twice is harmless.
      const changed = await db.run("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE tenant_id = ? AND id = ?", [now(), tenantId, id]);
      return changed > 0;
    },
    rotateKey(tenantId, id, secret) {
      return conflictAs(db.dialect, "an API key with this hash already exists", () =>
        db.transaction(async (tx) => {
          const old = await tx.get("UPDATE api_keys SET revoked_at = ? WHERE tenant_id = ? AND id = ? AND revoked_at IS NULL RETURNING *", [
            now(),
            tenantId,
            id,
          ]);
          if (old === undefined) return undefined;
          const previous = keyOf(old);
          return insertKey(tx, { ...secret, tenantId, name: previous.name, scopes: previous.scopes, expiresAt: previous.expiresAt });
        }),
      );
    },
    async countKeys() {
      const row = await db.get("SELECT COUNT(*) AS n FROM api_keys");
      return Number(row?.n ?? 0);
    },
    async touchKey(id, at = now()) {
      await db.run("UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)", [at, id, at - TOUCH_INTERVAL_MS]);
    },
  };
}
