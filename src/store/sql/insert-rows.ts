import type { Sql, SqlValue } from "./database.ts";

/** Bound parameters per statement, well under SQLite's (32766) and Postgres' (65535) limits. */
const MAX_PARAMS = 2000;

/**
 * Inserts `rows` with multi-row VALUES statements (one round trip per chunk instead of per
 * row), each followed by `onConflict` when given. Not atomic by itself: call it inside a
 * transaction when all rows must land together.
 */
export async function insertRows(q: Sql, table: string, columns: readonly string[], rows: readonly SqlValue[][], onConflict = ""): Promise<void> {
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS / columns.length));
  const tuple = `(${columns.map(() => "?").join(", ")})`;
  for (let i = 0; i < rows.length; i += perStatement) {
    const chunk = rows.slice(i, i + perStatement);
    await q.run(`INSERT INTO ${table} (${columns.join(", ")}) VALUES ${chunk.map(() => tuple).join(", ")} ${onConflict}`.trimEnd(), chunk.flat());
  }
}
