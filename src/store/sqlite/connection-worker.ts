/**
 * The thread that owns the `node:sqlite` connection. node:sqlite is synchronous: a large row,
 * a busy lock or the fsync of a commit would otherwise stop every stream of the server for
 * as long as it takes. The server's thread sends one request at a time per caller and awaits
 * the answer (`database.ts`); this thread runs them in arrival order.
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { parentPort, workerData } from "node:worker_threads";
import { type SqliteFailure, type SqliteReply, type SqliteRequest, type SqliteWorkerData, unpackValue } from "./worker-protocol.ts";

/** Prepared statements kept; SQL texts beyond this are re-prepared. */
const STATEMENT_CACHE_SIZE = 256;

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

function run(request: SqliteRequest): unknown {
  if (request.begin) db.exec("BEGIN IMMEDIATE");
  const params = (request.params ?? []).map(unpackValue) as SQLInputValue[];
  switch (request.op) {
    case "all":
      return prepare(request.sql).all(...params);
    case "get":
      return prepare(request.sql).get(...params);
    case "run":
      return Number(prepare(request.sql).run(...params).changes);
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
