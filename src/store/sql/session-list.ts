import type { SessionFilter } from "../types.ts";
import type { Dialect, SqlValue } from "./database.ts";
import { textMatch } from "./session-text.ts";

/** The condition "the session's metadata maps `?` to `?`" (two parameters: key, value). */
function metadataHas(dialect: Dialect): string {
  return dialect.name === "postgres"
    ? "(sessions.metadata::jsonb ->> ?::text) = ?::text"
    : "EXISTS (SELECT 1 FROM json_each(sessions.metadata) m WHERE m.key = ? AND m.value = ?)";
}

/** The WHERE conditions (ANDed) and parameters of `listSessions` for one tenant. */
export function sessionListWhere(dialect: Dialect, tenantId: string, filter: SessionFilter): { where: string[]; params: SqlValue[] } {
  const where = ["tenant_id = ?"];
  const params: SqlValue[] = [tenantId];
  const add = (sql: string, ...values: SqlValue[]) => {
    where.push(sql);
    params.push(...values);
  };
  if (filter.status !== undefined) add("status = ?", filter.status);
  if (filter.environmentId !== undefined) add("environment_id = ?", filter.environmentId);
  if (filter.archived !== undefined) add("archived = ?", filter.archived ? 1 : 0);
  if (filter.createdAfter !== undefined) add("created_at > ?", filter.createdAfter);
  if (filter.createdBefore !== undefined) add("created_at < ?", filter.createdBefore);
  for (const [key, value] of Object.entries(filter.metadata ?? {})) add(metadataHas(dialect), key, value);
  if (filter.words !== undefined && filter.words.length > 0) {
    const match = textMatch(dialect, filter.words);
    add(match.sql, ...match.params);
  }
  return { where, params };
}
