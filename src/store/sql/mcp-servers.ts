import { randomUUID } from "node:crypto";
import { RozError } from "../../errors/index.ts";
import type { McpAuthKind, McpHealth, McpOauthPending, McpServerRecord, McpServerStore } from "../types.ts";
import type { SqlRow } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { conflictAs, opt, optNum } from "./rows.ts";

const OTHER_SCOPE = "an MCP server with this name is registered in another scope (tenant-wide or another session)";

const serverOf = (row: SqlRow): McpServerRecord => ({
  id: String(row.id),
  tenantId: String(row.tenant_id),
  sessionId: opt(row.session_id as string | null),
  name: String(row.name),
  url: String(row.url),
  enabled: Number(row.enabled) === 1,
  authKind: String(row.auth_kind) as McpAuthKind,
  sealedCredentials: opt(row.credentials as string | null),
  health: String(row.health) as McpHealth,
  failureCount: Number(row.failure_count),
  degradedAt: optNum(row.degraded_at),
  lastError: opt(row.last_error as string | null),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

const pendingOf = (row: SqlRow): McpOauthPending => ({
  id: String(row.id),
  stateHash: String(row.state_hash),
  tenantId: String(row.tenant_id),
  serverId: String(row.server_id),
  sealed: String(row.sealed),
  expiresAt: Number(row.expires_at),
  createdAt: Number(row.created_at),
});

export function mcpServerRepo({ db, now }: StoreContext): McpServerStore {
  return {
    putMcpServer(tenantId, input) {
      return conflictAs(db.dialect, OTHER_SCOPE, () =>
        db.transaction(async (tx) => {
          const at = now();
          const old = await tx.get("SELECT id, session_id FROM mcp_servers WHERE tenant_id = ? AND name = ?", [tenantId, input.name]);
          if (old !== undefined && opt(old.session_id as string | null) !== input.sessionId) throw new RozError("conflict", OTHER_SCOPE);
          if (old !== undefined) await tx.run("DELETE FROM mcp_servers WHERE id = ?", [String(old.id)]);
          const row = await tx.get(
            `INSERT INTO mcp_servers (id, tenant_id, session_id, name, url, enabled, auth_kind, credentials, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
            [randomUUID(), tenantId, input.sessionId, input.name, input.url, input.enabled ? 1 : 0, input.authKind, input.sealedCredentials, at, at],
          );
          return serverOf(row!);
        }),
      );
    },

    async listMcpServers(tenantId, sessionId) {
      const rows =
        sessionId === undefined
          ? await db.all("SELECT * FROM mcp_servers WHERE tenant_id = ? ORDER BY name", [tenantId])
          : await db.all("SELECT * FROM mcp_servers WHERE tenant_id = ? AND (session_id IS NULL OR session_id = ?) ORDER BY name", [tenantId, sessionId]);
      return rows.map(serverOf);
    },

    async getMcpServer(tenantId, name) {
      const row = await db.get("SELECT * FROM mcp_servers WHERE tenant_id = ? AND name = ?", [tenantId, name]);
      return row && serverOf(row);
    },

    async deleteMcpServer(tenantId, name) {
      return (await db.run("DELETE FROM mcp_servers WHERE tenant_id = ? AND name = ?", [tenantId, name])) > 0;
    },

    async deleteSessionMcpServers(tenantId, sessionId) {
      const rows = await db.all("DELETE FROM mcp_servers WHERE tenant_id = ? AND session_id = ? RETURNING id", [tenantId, sessionId]);
      return rows.map((r) => String(r.id));
    },

    async setMcpServerHealth(id, change) {
      const changed = await db.run("UPDATE mcp_servers SET health = ?, failure_count = ?, degraded_at = ?, last_error = ?, updated_at = ? WHERE id = ?", [
        change.health,
        change.failureCount,
        change.degradedAt,
        change.lastError,
        now(),
        id,
      ]);
      return changed > 0;
    },

    async setMcpServerCredentials(id, sealedCredentials) {
      return (await db.run("UPDATE mcp_servers SET credentials = ?, updated_at = ? WHERE id = ?", [sealedCredentials, now(), id])) > 0;
    },

    async putMcpOauthPending(p) {
      const at = now();
      await db.transaction(async (tx) => {
        await tx.run("DELETE FROM mcp_oauth_pending WHERE expires_at < ?", [at]);
        await tx.run("INSERT INTO mcp_oauth_pending (id, state_hash, tenant_id, server_id, sealed, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", [
          p.id,
          p.stateHash,
          p.tenantId,
          p.serverId,
          p.sealed,
          p.expiresAt,
          at,
        ]);
      });
    },

    async takeMcpOauthPending(stateHash) {
      const row = await db.get("DELETE FROM mcp_oauth_pending WHERE state_hash = ? RETURNING *", [stateHash]);
      return row && pendingOf(row);
    },
  };
}
