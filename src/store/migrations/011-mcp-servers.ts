import type { Migration } from "./migration.ts";

/**
 * MCP servers as tool sources: per tenant (or per session, `session_id`), names unique per
 * tenant. `credentials` is sealed text (AES-256-GCM under the server's secret key), never
 * plain. Health is shared by every node through these columns.
 */
export const mcpServers: Migration = {
  version: 11,
  name: "mcp_servers",
  statements: () => [
    `CREATE TABLE mcp_servers (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      session_id TEXT,
      name TEXT NOT NULL,
      url TEXT NOT NULL,
      enabled SMALLINT NOT NULL,
      auth_kind TEXT NOT NULL CHECK (auth_kind IN ('none', 'bearer', 'static_header', 'oauth')),
      credentials TEXT,
      health TEXT NOT NULL DEFAULT 'healthy' CHECK (health IN ('healthy', 'degraded')),
      failure_count INTEGER NOT NULL DEFAULT 0,
      degraded_at BIGINT,
      last_error TEXT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      UNIQUE (tenant_id, name)
    )`,
  ],
};
