import type { Sql, SqlStatement, SqlValue } from "./database.ts";

/** Bound parameters per statement, well under SQLite's (32766) and Postgres' (65535) limits. */
const MAX_PARAMS = 2000;

/** `rows` cut into chunks that each fit one statement: each chunk's `VALUES` tuples and its parameters. */
export function valuesChunks(width: number, rows: readonly SqlValue[][]): { values: string; params: SqlValue[] }[] {
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS / width));
  const tuple = `(${Array.from({ length: width }, () => "?").join(", ")})`;
  const chunks: { values: string; params: SqlValue[] }[] = [];
  for (let i = 0; i < rows.length; i += perStatement) {
    const chunk = rows.slice(i, i + perStatement);
    chunks.push({ values: `VALUES ${chunk.map(() => tuple).join(", ")}`, params: chunk.flat() });
  }
  return chunks;
}

/** The statements that insert `rows` (multi-row VALUES, one per chunk), each followed by `onConflict` when given. */
export function insertStatements(table: string, columns: readonly string[], rows: readonly SqlValue[][], onConflict = ""): SqlStatement[] {
  return valuesChunks(columns.length, rows).map(({ values, params }) => ({
    sql: `INSERT INTO ${table} (${columns.join(", ")}) ${values} ${onConflict}`.trimEnd(),
    params,
  }));
}

/**
 * Inserts `rows` with multi-row VALUES statements (one round trip per chunk instead of per
 * row), each followed by `onConflict` when given. Not atomic by itself: call it inside a
 * transaction when all rows must land together.
 */
export async function insertRows(q: Sql, table: string, columns: readonly string[], rows: readonly SqlValue[][], onConflict = ""): Promise<void> {
  for (const { sql, params } of insertStatements(table, columns, rows, onConflict)) await q.run(sql, params);
}
