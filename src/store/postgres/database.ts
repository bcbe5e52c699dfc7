import pg from "pg";
import { TextParts, textPartsUtf8 } from "../../domain/index.ts";
import { RozError } from "../../errors/index.ts";
import type { Dialect, Sql, SqlConnection, SqlDatabase, SqlRow, SqlValue, SqlStatement } from "../sql/database.ts";

/** Advisory lock id held while migrating ("roz" in ASCII), so nodes starting together take turns. */
const MIGRATION_LOCK_ID = 0x726f7a;
const PG_UNIQUE_VIOLATION = "23505";
/** Thrown inside a batch's transaction to roll it back at a `mustChange` statement that changed nothing. */
const BATCH_STOPPED = Symbol("batch stopped");
const INT8_OID = 20;
const NUMERIC_OID = 1700;

export const postgresDialect: Dialect = {
  name: "postgres",
  bytesType: "BYTEA",
  isUniqueViolation(err) {
    return (err as { code?: unknown } | null)?.code === PG_UNIQUE_VIOLATION;
  },
};

export interface PostgresOptions {
  /** Pool size (default 10). */
  poolMax?: number;
  /** How long to wait for a connection before failing (default 10000 ms). */
  connectionTimeoutMs?: number;
  /** Errors of idle pooled connections (a restarted server, …); they are otherwise ignored. */
  onError?: (err: Error) => void;
}

/**
 * Type parsers for this pool only (pg's global parsers stay untouched): BIGINT columns and
 * SUM/COUNT results become JS numbers. Every integer the store keeps (epoch ms, token counts,
 * sequence numbers) is far below 2^53.
 */
const numberTypes = {
  getTypeParser(oid: number, format?: string) {
    if ((oid === INT8_OID || oid === NUMERIC_OID) && format !== "binary") return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format as "text");
  },
};

/** Rewrites the portable `?` placeholders to `$1, $2, …` (the shared SQL has no `?` in literals). */
export function toPostgresPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/** Carries the original error out of a transaction whose ROLLBACK also failed. */
class BrokenConnection extends Error {
  readonly original: unknown;
  constructor(original: unknown, cause: unknown) {
    super("connection broken during rollback", { cause });
    this.original = original;
  }
}

/**
 * pg sends a Buffer parameter as it is, in binary format, which for a text value is its UTF-8:
 * `TextParts` (a session snapshot, megabytes with a long history) are copied into one buffer
 * rather than decoded into a string on the event loop and encoded again by pg.
 */
const toParam = (v: SqlValue): unknown => (v === undefined ? null : v instanceof TextParts ? textPartsUtf8(v.parts) : v);

/** Postgres returns Buffers for BYTEA; the store hands out plain Uint8Arrays on both engines. */
function normalizeRow<T>(row: Record<string, unknown>): T {
  for (const key in row) {
    const v = row[key];
    if (Buffer.isBuffer(v)) row[key] = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  }
  return row as T;
}

/** Anything with pg's `query` (the pool or one checked-out client). */
type Queryer = Pick<pg.PoolClient, "query">;

function sqlOver(q: Queryer, placeholders: Map<string, string>): Sql {
  const text = (sql: string) => {
    let converted = placeholders.get(sql);
    if (converted === undefined) {
      converted = toPostgresPlaceholders(sql);
      if (placeholders.size < 1024) placeholders.set(sql, converted);
    }
    return converted;
  };
  const query = (sql: string, params: readonly SqlValue[] = []) => q.query(text(sql), params.map(toParam));
  return {
    all: async <T extends SqlRow>(sql: string, params?: readonly SqlValue[]) => (await query(sql, params)).rows.map((r) => normalizeRow<T>(r)),
    get: async <T extends SqlRow>(sql: string, params?: readonly SqlValue[]) => {
      const row = (await query(sql, params)).rows[0];
      return row === undefined ? undefined : normalizeRow<T>(row);
    },
    run: async (sql: string, params?: readonly SqlValue[]) => (await query(sql, params)).rowCount ?? 0,
  };
}

/** A pooled `pg` client behind the `SqlDatabase` seam; transactions run on one checked-out connection. */
export class PostgresDatabase implements SqlDatabase {
  readonly dialect = postgresDialect;
  readonly #pool: pg.Pool;
  readonly #placeholders = new Map<string, string>();
  readonly #sql: Sql;
  #closed = false;

  constructor(url: string, options: PostgresOptions = {}) {
    this.#pool = new pg.Pool({
      connectionString: url,
      max: options.poolMax ?? 10,
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
      types: numberTypes,
    });
    // Without a listener, an idle connection's error (server restart) would crash the process.
    this.#pool.on("error", (err) => options.onError?.(err));
    this.#sql = sqlOver(this.#pool, this.#placeholders);
  }

  async all<T extends SqlRow = SqlRow>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    this.#checkOpen();
    return this.#sql.all<T>(sql, params);
  }

  async get<T extends SqlRow = SqlRow>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    this.#checkOpen();
    return this.#sql.get<T>(sql, params);
  }

  async run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    this.#checkOpen();
    return this.#sql.run(sql, params);
  }

  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    return this.#withClient((client) => this.#transactionOn(client, fn));
  }

  async batch(statements: readonly SqlStatement[]): Promise<number[]> {
    return (await this.#batch(statements)).changes;
  }

  async batchThenGet<T extends SqlRow = SqlRow>(statements: readonly SqlStatement[], query: SqlStatement): Promise<T | undefined> {
    return (await this.#batch(statements, query)).row as T | undefined;
  }

  /**
   * `statements` in one transaction, then `query` when given: their counts, and the query's
   * first row. A `mustChange` statement that changed nothing rolls it all back, and the counts
   * end with its 0 (no row).
   */
  async #batch(statements: readonly SqlStatement[], query?: SqlStatement): Promise<{ changes: number[]; row?: SqlRow | undefined }> {
    const changes: number[] = [];
    try {
      const row = await this.transaction(async (tx) => {
        for (const { sql, params, mustChange } of statements) {
          const changed = await tx.run(sql, params);
          changes.push(changed);
          if (changed === 0 && mustChange) throw BATCH_STOPPED;
        }
        return query === undefined ? undefined : tx.get(query.sql, query.params);
      });
      return { changes, row };
    } catch (err) {
      if (err === BATCH_STOPPED) return { changes };
      throw err;
    }
  }

  /** A session-level advisory lock on a dedicated connection, held until `fn` settles. */
  withMigrationLock<T>(fn: (conn: SqlConnection) => Promise<T>): Promise<T> {
    return this.#withClient(async (client) => {
      await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_ID]);
      try {
        return await fn({
          ...sqlOver(client, this.#placeholders),
          transaction: (inner) => this.#transactionOn(client, inner),
        });
      } finally {
        // A lock we cannot release must not go back to the pool with its connection.
        await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_ID]).catch((unlockErr: unknown) => {
          throw new BrokenConnection(unlockErr, unlockErr);
        });
      }
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }

  async #transactionOn<T>(client: pg.PoolClient, fn: (tx: Sql) => Promise<T>): Promise<T> {
    await client.query("BEGIN");
    try {
      const result = await fn(sqlOver(client, this.#placeholders));
      await client.query("COMMIT");
      return result;
    } catch (err) {
      // A failed ROLLBACK leaves the connection in an unknown state: #withClient drops it.
      await client.query("ROLLBACK").catch((rollbackErr: unknown) => {
        throw new BrokenConnection(err, rollbackErr);
      });
      throw err;
    }
  }

  /**
   * Checks a connection out for `fn`. A connection whose cleanup failed (ROLLBACK, unlock) is
   * destroyed rather than returned to the pool; pg-pool itself drops connections that died.
   */
  async #withClient<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.#checkOpen();
    const client = await this.#pool.connect();
    let destroy = false;
    try {
      return await fn(client);
    } catch (err) {
      if (err instanceof BrokenConnection) {
        destroy = true;
        throw err.original;
      }
      throw err;
    } finally {
      client.release(destroy);
    }
  }

  #checkOpen(): void {
    if (this.#closed) throw new RozError("unavailable", "store is closed");
  }
}
