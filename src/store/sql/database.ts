/**
 * The small adapter seam between the shared SQL of `src/store/sql` and a database engine.
 * SQL is written once with `?` placeholders and portable syntax (ON CONFLICT, RETURNING,
 * row values); an adapter rewrites placeholders and maps values where its engine needs it.
 */
import type { TextParts } from "../../domain/index.ts";

/**
 * A bound parameter: what both engines accept. `undefined` is sent as NULL. `TextParts` are
 * their joined text; on PostgreSQL they travel as UTF-8 in binary format, which is that text
 * only where the parameter's type resolves to `text` (a TEXT column, `COALESCE(?, a_text_column)`):
 * elsewhere write `?::text`. Never bind them to `jsonb` (binary jsonb needs a version byte).
 */
export type SqlValue = string | number | null | undefined | Uint8Array | TextParts;

/** A result row: column name → value. Integers come back as JS numbers, blobs as Uint8Array. */
export type SqlRow = Record<string, unknown>;

/** Runs statements; inside `transaction()` every call belongs to that transaction. */
export interface Sql {
  all<T extends SqlRow = SqlRow>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  get<T extends SqlRow = SqlRow>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  /** Returns the number of rows changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
}

/** What differs between engines and cannot be hidden in SQL text. */
export interface Dialect {
  readonly name: "sqlite" | "postgres";
  /** Column type for raw bytes (`BLOB` / `BYTEA`). */
  readonly bytesType: string;
  /** Whether `err` is a unique / primary-key violation. */
  isUniqueViolation(err: unknown): boolean;
}

/** Statements plus transactions. */
export interface SqlConnection extends Sql {
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws (the
   * error is rethrown). `fn` must use the `tx` it is given, never the connection itself.
   */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
}

/** One statement of a `batch`. */
export interface SqlStatement {
  sql: string;
  params?: readonly SqlValue[];
  /**
   * When it changes no row (an update of a row that is not there), the batch stops there and
   * is rolled back: `batch` answers the counts up to it, `batchThenGet` undefined.
   */
  mustChange?: boolean;
}

export interface SqlDatabase extends SqlConnection {
  readonly dialect: Dialect;
  /**
   * Runs statements that need no answer but their counts of changed rows, in order, in one
   * transaction (all or none). On SQLite they travel to the connection's thread as one
   * request: one round trip instead of one per statement plus the commit.
   */
  batch(statements: readonly SqlStatement[]): Promise<number[]>;
  /** `batch`, then `query` in the same transaction (and request): its first row, undefined when it has none. */
  batchThenGet<T extends SqlRow = SqlRow>(statements: readonly SqlStatement[], query: SqlStatement): Promise<T | undefined>;
  /**
   * Runs `fn` while holding the engine's cross-process migration lock, on a connection that
   * keeps it (SQLite: each migration's `BEGIN IMMEDIATE` is the lock; Postgres: a session
   * advisory lock on one dedicated connection).
   */
  withMigrationLock<T>(fn: (conn: SqlConnection) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
