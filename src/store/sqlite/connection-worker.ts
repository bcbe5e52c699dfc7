/**
 * The thread that owns the `node:sqlite` connection. node:sqlite is synchronous: a large row,
 * a busy lock or the fsync of a commit would otherwise stop every stream of the server for
 * as long as it takes. The server's thread sends one request at a time per caller and awaits
 * the answer (`database.ts`); this thread runs them in arrival order.
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { parentPort, workerData } from "node:worker_threads";
import {
  type PackedStatement,
  type SqliteFailure,
  type SqliteOp,
  type SqliteReply,
  type SqliteRequest,
  type SqliteWorkerData,
  unpackValue,
} from "./worker-protocol.ts";

/** Prepared statements kept; SQL texts beyond this are re-prepared. */
const STATEMENT_CACHE_SIZE = 256;
/** Parameters of at least this many bytes in all (UTF-8 for text) are never left bound to a cached statement. */
const LARGE_PARAMS = 1024 * 1024;

const { path, options } = workerData as SqliteWorkerData;
const port = parentPort;
if (port === null) throw new Error("connection-worker.ts runs as a worker thread");

const failure = (err: unknown): SqliteFailure => {
  const e = err as { message?: unknown; code?: unknown; errcode?: unknown; errstr?: unknown } | null;
  return {
    message: typeof e?.message === "string" ? e.message : String(err),
    ...(typeof e?.code === "string" ? { code: e.code } : {}),
    ...(typeof e?.errcode === "number" ? { errcode: e.errcode } : {}),
    ...(typeof e?.errstr === "string" ? { errstr: e.errstr } : {}),
  };
};

let db: DatabaseSync;
try {
  db = new DatabaseSync(path, { timeout: options.busyTimeoutMs ?? 5000, enableForeignKeyConstraints: true });
  // WAL: readers never block the writer, and a crash leaves the last commit intact.
  db.exec("PRAGMA journal_mode = WAL");
  db.exec(`PRAGMA synchronous = ${options.synchronous ?? "FULL"}`);
  db.exec("PRAGMA foreign_keys = ON");
} catch (err) {
  port.postMessage({ id: 0, ok: false, error: failure(err) } satisfies SqliteReply);
  process.exit(0);
}
port.postMessage({ id: 0, ok: true, value: undefined } satisfies SqliteReply);

const statements = new Map<string, StatementSync>();
const prepare = (sql: string): StatementSync => {
  let stmt = statements.get(sql);
  if (stmt === undefined) {
    if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
    stmt = db.prepare(sql);
    statements.set(sql, stmt);
  }
  return stmt;
};

type StatementOp = Extract<SqliteOp, "all" | "get" | "run">;

function query(stmt: StatementSync, op: StatementOp, params: SQLInputValue[]): unknown {
  switch (op) {
    case "all":
      return stmt.all(...params);
    case "get":
      return stmt.get(...params);
    case "run":
      return Number(stmt.run(...params).changes);
  }
}

/** Characters in a string, or its UTF-8 bytes when those may reach `LARGE_PARAMS` (up to three per character). */
const sizeOf = (value: SQLInputValue): number => {
  if (typeof value === "string") return value.length * 3 < LARGE_PARAMS ? value.length : Buffer.byteLength(value, "utf8");
  return ArrayBuffer.isView(value) ? value.byteLength : 0;
};

/**
 * SQLite keeps a statement's bound values until it is bound again (a reset leaves them, and
 * node:sqlite can neither clear nor finalize a statement): a cached statement would hold a
 * multi-megabyte snapshot for as long as its SQL is not run again. After a run with large
 * parameters the statement is bound again to NULLs, which frees SQLite's copies; `iterate`
 * binds without stepping, so nothing runs.
 */
function runStatement(op: StatementOp, sql: string, params: SQLInputValue[]): unknown {
  let size = 0;
  for (const value of params) size += sizeOf(value);
  const stmt = prepare(sql);
  if (size < LARGE_PARAMS) return query(stmt, op, params);
  try {
    return query(stmt, op, params);
  } finally {
    stmt.iterate(...params.map(() => null));
  }
}

const unpacked = (s: PackedStatement): SQLInputValue[] => s.params.map(unpackValue) as SQLInputValue[];

/**
 * A batch's statements in one transaction, then its query if it has one: committed when all
 * ran, else rolled back and the error rethrown. Answers the counts, or the query's first row.
 */
function runBatch(statements: readonly PackedStatement[], query: PackedStatement | undefined): unknown {
  db.exec("BEGIN IMMEDIATE");
  try {
    const changes: number[] = [];
    for (const s of statements) {
      const changed = runStatement("run", s.sql, unpacked(s)) as number;
      changes.push(changed);
      if (changed === 0 && s.mustChange) {
        db.exec("ROLLBACK");
        return query === undefined ? changes : undefined;
      }
    }
    const answer = query === undefined ? changes : runStatement("get", query.sql, unpacked(query));
    db.exec("COMMIT");
    return answer;
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw err;
  }
}

function run(request: SqliteRequest): unknown {
  if (request.op === "batch") return runBatch(request.statements ?? [], request.query);
  if (request.begin) db.exec("BEGIN IMMEDIATE");
  switch (request.op) {
    case "exec":
      db.exec(request.sql);
      return undefined;
    case "rollback":
      if (db.isTransaction) db.exec("ROLLBACK");
      return undefined;
    case "close":
      statements.clear();
      db.close();
      return undefined;
    default:
      return runStatement(request.op, request.sql, (request.params ?? []).map(unpackValue) as SQLInputValue[]);
  }
}

port.on("message", (request: SqliteRequest) => {
  let reply: SqliteReply;
  try {
    reply = { id: request.id, ok: true, value: run(request) };
  } catch (err) {
    reply = { id: request.id, ok: false, error: failure(err) };
  }
  port.postMessage(reply);
  if (request.op === "close") port.close();
});
