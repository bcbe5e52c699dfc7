import type { Migration } from "./migration.ts";

/**
 * Multi-agent tasks: a task, its workers, and its team event log (each event the serialized
 * `TeamEvent` a watcher receives, numbered per task). `last_seq` is written with each batch of
 * events, so a finished task's row says where its log ends.
 */
export const teams: Migration = {
  version: 3,
  name: "teams",
  statements: (d) => [
    `CREATE TABLE tasks (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      environment_id TEXT NOT NULL,
      session_id TEXT,
      prompt TEXT NOT NULL,
      model TEXT,
      status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'cancelled')),
      node_id TEXT,
      last_seq BIGINT NOT NULL DEFAULT 0,
      input_tokens BIGINT NOT NULL DEFAULT 0,
      output_tokens BIGINT NOT NULL DEFAULT 0,
      cache_read_tokens BIGINT NOT NULL DEFAULT 0,
      cache_creation_tokens BIGINT NOT NULL DEFAULT 0,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      ended_at BIGINT
    )`,
    `CREATE INDEX tasks_by_tenant ON tasks (tenant_id, created_at, id)`,
    `CREATE INDEX tasks_by_status ON tasks (status, node_id)`,
    `CREATE TABLE workers (
      id TEXT PRIMARY KEY,
      task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
      idx INTEGER NOT NULL,
      prompt TEXT NOT NULL,
      mode TEXT NOT NULL,
      model TEXT NOT NULL,
      depth INTEGER NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
      result TEXT,
      failure TEXT,
      transcript TEXT,
      input_tokens BIGINT NOT NULL DEFAULT 0,
      output_tokens BIGINT NOT NULL DEFAULT 0,
      cache_read_tokens BIGINT NOT NULL DEFAULT 0,
      cache_creation_tokens BIGINT NOT NULL DEFAULT 0,
      created_at BIGINT NOT NULL,
      ended_at BIGINT,
      UNIQUE (task_id, idx)
    )`,
    `CREATE TABLE team_events (
      task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
      seq BIGINT NOT NULL,
      payload ${d.bytesType} NOT NULL,
      created_at BIGINT NOT NULL,
      PRIMARY KEY (task_id, seq)
    )`,
  ],
};
