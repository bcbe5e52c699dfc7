import { Worker } from "node:worker_threads";
import { RozError } from "../../errors/index.ts";
import type { Dialect, Sql, SqlConnection, SqlDatabase, SqlRow, SqlStatement, SqlValue } from "../sql/database.ts";
import {
  type PackedStatement,
  packValue,
  type SqliteFailure,
  type SqliteOp,
  type SqliteOptions,
  type SqliteReply,
  type SqliteRequest,
  type SqliteWorkerData,
} from "./worker-protocol.ts";

export type { SqliteOptions } from "./worker-protocol.ts";

/** SQLite's extended result codes for constraint violations that mean "already exists". */
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

export const sqliteDialect: Dialect = {
  name: "sqlite",
  bytesType: "BLOB",
  isUniqueViolation(err) {
    const code = (err as { errcode?: unknown } | null)?.errcode;
    return code === SQLITE_CONSTRAINT_UNIQUE || code === SQLITE_CONSTRAINT_PRIMARYKEY;
  },
};

const workerUrl = new URL("./connection-worker.ts", import.meta.url);

/** Statement values ready to post (`undefined` is NULL). */
const packAll = (params: readonly SqlValue[]): unknown[] => params.map((v) => packValue(v === undefined ? null : v));

const packStatement = ({ sql, params = [], mustChange }: SqlStatement): PackedStatement => ({
  sql,
  params: packAll(params),
  ...(mustChange ? { mustChange } : {}),
});

/** The error a statement threw in the connection's thread, with SQLite's codes kept. */
function sqliteError(failure: SqliteFailure): Error {
  return Object.assign(new Error(failure.message), failure);
}

/**
 * One `node:sqlite` connection, owned by a thread of its own (`connection-worker.ts`), behind
 * the async `SqlDatabase` seam: statements, large rows and commit fsyncs never block the
 * server's event loop. A connection has one transaction at a time, so every operation runs
 * in turn through an async queue: a transaction holds the queue until it commits, and no
 * statement of another caller can slip into it. Open a given file once per process.
 */
export class SqliteDatabase implements SqlDatabase {
  readonly dialect = sqliteDialect;
  readonly #worker: Worker;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: unknown) => void }>();
  #nextId = 1;
  #tail: Promise<unknown> = Promise.resolve();
  #closed = false;
  /** A transaction was asked for and its BEGIN not yet sent (it goes with the next statement). */
  #beginPending = false;
  /** Why the connection's thread is gone, once it is. */
  #lost: Error | undefined;
  /** Statement runner used inside a transaction, where the queue is already held. */
  readonly #direct: Sql = {
    all: <T extends SqlRow>(sql: string, params: readonly SqlValue[] = []) => this.#call("all", sql, params) as Promise<T[]>,
    get: <T extends SqlRow>(sql: string, params: readonly SqlValue[] = []) => this.#call("get", sql, params) as Promise<T | undefined>,
    run: (sql: string, params: readonly SqlValue[] = []) => this.#call("run", sql, params) as Promise<number>,
  };

  /** Opens (creating if needed) `path`, or an in-memory database for `:memory:`; rejects with SQLite's error. */
  static async open(path: string, options: SqliteOptions = {}): Promise<SqliteDatabase> {
    const db = new SqliteDatabase(path, options);
    try {
      await db.#opened;
    } catch (err) {
      db.#closed = true;
      await db.#worker.terminate();
      throw err;
    }
    return db;
  }

  readonly #opened: Promise<unknown>;

  private constructor(path: string, options: SqliteOptions) {
    // Only what the thread needs: the options of a store also hold functions, which cannot be posted.
    const { synchronous, busyTimeoutMs } = options;
    this.#worker = new Worker(workerUrl, { workerData: { path, options: { synchronous, busyTimeoutMs } } satisfies SqliteWorkerData });
    this.#opened = new Promise((resolve, reject) => this.#pending.set(0, { resolve, reject }));
    this.#worker.on("message", (reply: SqliteReply) => {
      const waiter = this.#pending.get(reply.id);
      if (waiter === undefined) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) this.#worker.unref();
      if (reply.ok) waiter.resolve(reply.value);
      else waiter.reject(sqliteError(reply.error));
    });
    const lost = (err: Error): void => {
      this.#lost ??= err;
      for (const waiter of this.#pending.values()) waiter.reject(this.#unavailable());
      this.#pending.clear();
    };
    this.#worker.on("error", lost);
    this.#worker.on("exit", (code) => lost(new Error(`the database thread exited (code ${code})`)));
  }

  all<T extends SqlRow = SqlRow>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.#exclusive(() => this.#direct.all<T>(sql, params));
  }

  get<T extends SqlRow = SqlRow>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.#exclusive(() => this.#direct.get<T>(sql, params));
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.#exclusive(() => this.#direct.run(sql, params));
  }

  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    return this.#exclusive(async () => {
      // BEGIN travels with the transaction's first statement: one round trip to the thread less.
      this.#beginPending = true;
      try {
        const result = await fn(this.#direct);
        if (this.#beginPending) return result; // no statement: nothing was begun
        await this.#call("exec", "COMMIT");
        return result;
      } catch (err) {
        // With BEGIN still pending no statement was sent: there is nothing to roll back.
        if (!this.#beginPending) await this.#call("rollback", "").catch(() => undefined);
        throw err;
      } finally {
        this.#beginPending = false;
      }
    });
  }

  batch(statements: readonly SqlStatement[]): Promise<number[]> {
    if (statements.length === 0) return Promise.resolve([]);
    return this.#exclusive(() => this.#post({ op: "batch", sql: "", statements: statements.map(packStatement) }) as Promise<number[]>);
  }

  batchThenGet<T extends SqlRow = SqlRow>(statements: readonly SqlStatement[], query: SqlStatement): Promise<T | undefined> {
    const request = { op: "batch", sql: "", statements: statements.map(packStatement), query: packStatement(query) } as const;
    return this.#exclusive(() => this.#post(request) as Promise<T | undefined>);
  }

  /** Each migration's `BEGIN IMMEDIATE` is the cross-process lock here; nothing more to take. */
  withMigrationLock<T>(fn: (conn: SqlConnection) => Promise<T>): Promise<T> {
    return fn(this);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#tail.catch(() => undefined);
    if (this.#lost === undefined) await this.#call("close", "").catch(() => undefined);
    await this.#worker.terminate();
  }

  /** Runs `fn` after everything queued before it; a failure does not block later calls. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new RozError("unavailable", "store is closed"));
    const run = this.#tail.then(fn);
    this.#tail = run.catch(() => undefined);
    return run;
  }

  /** The error of every call once the connection's thread is gone. */
  #unavailable(): RozError {
    return new RozError("unavailable", `store is unavailable: ${this.#lost?.message ?? "the database thread is gone"}`);
  }

  /** One statement (or `exec`, `rollback`, `close`) for the connection's thread; a pending BEGIN goes with it. */
  #call(op: SqliteOp, sql: string, params: readonly SqlValue[] = []): Promise<unknown> {
    const request: Omit<SqliteRequest, "id"> = { op, sql, params: packAll(params) };
    if (this.#beginPending) {
      request.begin = true;
      this.#beginPending = false;
    }
    return this.#post(request);
  }

  /** One request to the connection's thread; the thread keeps the process alive only while one is pending. */
  #post(fields: Omit<SqliteRequest, "id">): Promise<unknown> {
    if (this.#lost !== undefined) return Promise.reject(this.#unavailable());
    const id = this.#nextId++;
    const request: SqliteRequest = { id, ...fields };
    return new Promise((resolve, reject) => {
      if (this.#pending.size === 0) this.#worker.ref();
      this.#pending.set(id, { resolve, reject });
      try {
        this.#worker.postMessage(request);
      } catch (err) {
        this.#pending.delete(id);
        if (this.#pending.size === 0) this.#worker.unref();
        reject(err);
      }
    });
  }
}
