/** The messages between `SqliteDatabase` and the thread that owns the connection. */
import { joinTextParts, TextParts } from "../../domain/index.ts";

export interface SqliteOptions {
  /**
   * `FULL` (default) fsyncs the WAL at every commit, so a committed turn survives power loss;
   * `NORMAL` survives process crashes (kill -9) but may lose the last commits on power loss.
   */
  synchronous?: "NORMAL" | "FULL";
  /** How long a statement waits for another process's lock (default 5000 ms). */
  busyTimeoutMs?: number;
}

export interface SqliteWorkerData {
  path: string;
  options: SqliteOptions;
}

/** A statement with its values as `packValue` made them. */
export interface PackedStatement {
  sql: string;
  params: readonly unknown[];
  /** See `SqlStatement.mustChange`. */
  mustChange?: boolean;
}

/**
 * `rollback` rolls back only when a transaction is open; `close` closes the connection;
 * `batch` runs `statements` in one transaction and answers their counts of changed rows (or
 * the first row of its `query`, run last in the same transaction).
 */
export type SqliteOp = "all" | "get" | "run" | "exec" | "rollback" | "close" | "batch";

export interface SqliteRequest {
  id: number;
  op: SqliteOp;
  sql: string;
  /** Values as `packValue` made them. */
  params?: readonly unknown[];
  /** The statements of a `batch`, their values packed. */
  statements?: readonly PackedStatement[];
  /** A `batch`'s query after its statements: the batch then answers its first row instead of the counts. */
  query?: PackedStatement;
  /**
   * Run `BEGIN IMMEDIATE` first (it takes the write lock up front: no lock upgrade, so no
   * deadlock between processes). A failing BEGIN fails the request.
   */
  begin?: boolean;
}

/** What a thrown SQLite error carries across the thread boundary. */
export interface SqliteFailure {
  message: string;
  code?: string;
  errcode?: number;
  errstr?: string;
}

/** Id 0 answers the opening of the connection. */
export type SqliteReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SqliteFailure };

/** `TextParts` on their way to the connection's thread (a class does not survive the trip). */
interface PostedTextParts {
  textParts: readonly (string | Uint8Array)[];
}

/** `value` ready to post: `TextParts` as their parts (shared bytes are not copied). */
export function packValue(value: unknown): unknown {
  return value instanceof TextParts ? ({ textParts: value.parts } satisfies PostedTextParts) : value;
}

/** The value `packValue` made, as the engine takes it: parts joined into one string. */
export function unpackValue(value: unknown): unknown {
  const posted = value as PostedTextParts | null;
  return posted !== null && typeof posted === "object" && Array.isArray(posted.textParts) ? joinTextParts(posted.textParts) : value;
}
