import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { RozError } from "../../errors/index.ts";
import type { Dialect, Sql, SqlConnection, SqlDatabase, SqlRow, SqlValue } from "../sql/database.ts";

/** SQLite's extended result codes for constraint violations that mean "already exists". */
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_CONSTRAINT_UNIQUE = 2067;
/** Prepared statements kept per connection; SQL texts beyond this are re-prepared. */
const STATEMENT_CACHE_SIZE = 256;

export const sqliteDialect: Dialect = {
  name: "sqlite",
  bytesType: "BLOB",
  isUniqueViolation(err) {
    const code = (err as { errcode?: unknown } | null)?.errcode;
    return code === SQLITE_CONSTRAINT_UNIQUE || code === SQLITE_CONSTRAINT_PRIMARYKEY;
  },
};

export interface SqliteOptions {
  /**
   * `FULL` (default) fsyncs the WAL at every commit, so a committed turn survives power loss;
   * `NORMAL` survives process crashes (kill -9) but may lose the last commits on power loss.
   */
  synchronous?: "NORMAL" | "FULL";
  /** How long a statement waits for another process's lock (default 5000 ms). */
  busyTimeoutMs?: number;
}

const toParam = (v: SqlValue): SQLInputValue => (v === undefined ? null : v);

/**
 * One `node:sqlite` connection behind the async `SqlDatabase` seam. node:sqlite is
 * synchronous and a connection has one transaction at a time, so every operation runs in
 * turn through an async queue: a transaction holds the queue until it commits, and no
 * statement of another caller can slip into it. Open a given file once per process (two
 * connections of one process would block each other's locks on the one thread).
 */
export class SqliteDatabase implements SqlDatabase {
  readonly dialect = sqliteDialect;
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();
  #tail: Promise<unknown> = Promise.resolve();
  #closed = false;
  /** Statement runner used inside a transaction, where the queue is already held. */
  readonly #direct: Sql = {
    all: async <T extends SqlRow>(sql: string, params: readonly SqlValue[] = []) => this.#prepare(sql).all(...params.map(toParam)) as T[],
    get: async <T extends SqlRow>(sql: string, params: readonly SqlValue[] = []) => this.#prepare(sql).get(...params.map(toParam)) as T | undefined,
    run: async (sql: string, params: readonly SqlValue[] = []) => Number(this.#prepare(sql).run(...params.map(toParam)).changes),
  };

  /** Opens (creating if needed) `path`, or an in-memory database for `:memory:`. */
  constructor(path: string, options: SqliteOptions = {}) {
    this.#db = new DatabaseSync(path, { timeout: options.busyTimeoutMs ?? 5000, enableForeignKeyConstraints: true });
    try {
      // WAL: readers never block the writer, and a crash leaves the last commit intact.
      this.#db.exec("PRAGMA journal_mode = WAL");
      this.#db.exec(`PRAGMA synchronous = ${options.synchronous ?? "FULL"}`);
      this.#db.exec("PRAGMA foreign_keys = ON");
    } catch (err) {
      this.#db.close();
      throw err;
    }
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
      // IMMEDIATE takes the write lock up front: no lock upgrade, so no deadlock between processes.
      this.#db.exec("BEGIN IMMEDIATE");
      try {
        const result = await fn(this.#direct);
        this.#db.exec("COMMIT");
        return result;
      } catch (err) {
        if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
        throw err;
      }
    });
  }

  /** Each migration's `BEGIN IMMEDIATE` is the cross-process lock here; nothing more to take. */
  withMigrationLock<T>(fn: (conn: SqlConnection) => Promise<T>): Promise<T> {
    return fn(this);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#tail.catch(() => undefined);
    this.#statements.clear();
    this.#db.close();
  }

  /**
   * Runs `fn` after everything queued before it; a failure does not block later calls.
   * Queued work waits one event-loop turn first: node:sqlite blocks while it runs, and
   * back-to-back transactions would otherwise starve every stream for their sum.
   */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new RozError("unavailable", "store is closed"));
    const run = this.#tail.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(() => fn());
    this.#tail = run.catch(() => undefined);
    return run;
  }

  #prepare(sql: string): StatementSync {
    let stmt = this.#statements.get(sql);
    if (stmt === undefined) {
      if (this.#statements.size >= STATEMENT_CACHE_SIZE) this.#statements.clear();
      stmt = this.#db.prepare(sql);
      this.#statements.set(sql, stmt);
    }
    return stmt;
  }
}
