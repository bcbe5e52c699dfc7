import type { Migration } from "./migration.ts";

/**
 * The first schema. Conventions: ids are TEXT (UUIDs made by the server; a malformed id
 * then simply matches nothing), times are BIGINT epoch milliseconds, JSON is TEXT, booleans
 * are SMALLINT 0/1 — the same on both engines, so one query code path serves both.
 */
export const initial: Migration = {
  version: 1,
  name: "initial",
  statements: (d) => [
    `CREATE TABLE tenants (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL UNIQUE,
      created_at BIGINT NOT NULL
    )`,
    `CREATE TABLE api_keys (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      prefix TEXT NOT NULL,
      hash TEXT NOT NULL UNIQUE,
      scopes TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      last_used_at BIGINT,
      revoked_at BIGINT,
      expires_at BIGINT
    )`,
    `CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, created_at, id)`,
    `CREATE TABLE environments (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      kind TEXT NOT NULL,
      default_model TEXT,
      instructions TEXT,
      permissions TEXT NOT NULL,
      tool_defaults TEXT NOT NULL,
      is_default SMALLINT NOT NULL DEFAULT 0,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      UNIQUE (tenant_id, name)
    )`,
    // At most one default per tenant: what makes getDefaultEnvironment race-free across nodes.
    `CREATE UNIQUE INDEX environments_one_default ON environments (tenant_id) WHERE is_default = 1`,
    `CREATE INDEX environments_by_tenant ON environments (tenant_id, created_at, id)`,
    // No foreign key to environments: deleting an environment keeps its sessions' history.
    `CREATE TABLE sessions (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      environment_id TEXT NOT NULL,
      model TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('active', 'detached', 'completed', 'cancelled', 'error')),
      node_id TEXT,
      host_id TEXT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      ended_at BIGINT,
      input_tokens BIGINT NOT NULL DEFAULT 0,
      output_tokens BIGINT NOT NULL DEFAULT 0,
      cache_read_tokens BIGINT NOT NULL DEFAULT 0,
      cache_creation_tokens BIGINT NOT NULL DEFAULT 0,
      turn_count INTEGER NOT NULL DEFAULT 0,
      compaction_count INTEGER NOT NULL DEFAULT 0
    )`,
    `CREATE INDEX sessions_by_tenant ON sessions (tenant_id, created_at, id)`,
    `CREATE INDEX sessions_by_status ON sessions (status, node_id)`,
    `CREATE INDEX sessions_by_end ON sessions (ended_at)`,
    `CREATE TABLE turns (
      session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
      seq INTEGER NOT NULL,
      message_id TEXT NOT NULL,
      user_content TEXT NOT NULL,
      user_context TEXT NOT NULL,
      mode TEXT NOT NULL,
      assistant_text TEXT NOT NULL,
      assistant_thinking TEXT NOT NULL,
      input_tokens BIGINT NOT NULL,
      output_tokens BIGINT NOT NULL,
      cache_read_tokens BIGINT NOT NULL,
      cache_creation_tokens BIGINT NOT NULL,
      stop_reason TEXT NOT NULL,
      error TEXT,
      compactions INTEGER NOT NULL,
      started_at BIGINT NOT NULL,
      ended_at BIGINT NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`,
    `CREATE INDEX turns_by_message ON turns (session_id, message_id)`,
    // The outcome columns are NULL together when the call got no client result.
    `CREATE TABLE tool_calls (
      session_id TEXT NOT NULL,
      turn_seq INTEGER NOT NULL,
      idx INTEGER NOT NULL,
      tool_call_id TEXT NOT NULL,
      name TEXT NOT NULL,
      parameters TEXT NOT NULL,
      permission TEXT NOT NULL,
      success SMALLINT,
      result TEXT,
      exit_code INTEGER,
      truncated SMALLINT,
      duration_ms BIGINT,
      error TEXT,
      started_at BIGINT NOT NULL,
      ended_at BIGINT NOT NULL,
      PRIMARY KEY (session_id, turn_seq, idx),
      FOREIGN KEY (session_id, turn_seq) REFERENCES turns (session_id, seq) ON DELETE CASCADE
    )`,
    `CREATE TABLE feedback (
      session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
      message_id TEXT NOT NULL,
      rating TEXT NOT NULL,
      comment TEXT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (session_id, message_id)
    )`,
    `CREATE TABLE session_events (
      session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
      seq BIGINT NOT NULL,
      payload ${d.bytesType} NOT NULL,
      created_at BIGINT NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`,
  ],
};
