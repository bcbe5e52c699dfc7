import type { Migration } from "./migration.ts";

/**
 * OAuth authorizations of MCP servers waiting for the user's browser: one row per `Register`
 * with OAuth, found by the hash of its `state` (never the state itself), taken once by the
 * callback on whichever node it reaches, and gone with its server. `sealed` holds the PKCE
 * verifier and the registered client, sealed like every credential.
 */
export const mcpOauth: Migration = {
  version: 12,
  name: "mcp_oauth",
  statements: () => [
    `CREATE TABLE mcp_oauth_pending (
      id TEXT PRIMARY KEY,
      state_hash TEXT NOT NULL UNIQUE,
      tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      server_id TEXT NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
      sealed TEXT NOT NULL,
      expires_at BIGINT NOT NULL,
      created_at BIGINT NOT NULL
    )`,
    "CREATE INDEX mcp_oauth_pending_server ON mcp_oauth_pending (server_id)",
  ],
};
