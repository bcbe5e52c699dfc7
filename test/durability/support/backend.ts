/**
 * The two stores a durability test runs the real server on, behind one shape: the settings
 * that point every server started with them at the SAME data, and read access to that data
 * as a restarted server would find it.
 */
import { DatabaseSync } from "node:sqlite";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { SQLITE_FILE_NAME } from "../../../src/store/index.ts";
import { afterAll, describe, it } from "vitest";
import { postgresForTests, type TestPostgres } from "../../support/postgres.ts";

export type Row = Record<string, unknown>;

export interface DurabilityBackend {
  readonly name: "sqlite" | "postgres";
  /** Server settings (`ROZ_DATA_DIR` or `DATABASE_URL`): every server started with them shares the data. */
  readonly env: Record<string, string>;
  /**
   * Runs read-only `queries` against the data as it is now, while no server runs (after a
   * SIGKILL): SQLite reads a COPY of the database file and its WAL, so the next server's own
   * crash recovery still starts from the untouched files. Also returns the engine's physical
   * check (`PRAGMA integrity_check` rows for SQLite; PostgreSQL has none: `["ok"]`).
   */
  inspect(queries: readonly string[]): Promise<{ integrity: string[]; results: Row[][] }>;
  /** Removes the data (temp folder or database). Idempotent. */
  dispose(): Promise<void>;
}

/** SQLite in a fresh temporary `ROZ_DATA_DIR`. */
export async function sqliteBackend(): Promise<DurabilityBackend> {
  const dataDir = await mkdtemp(join(tmpdir(), "roz-durability-"));
  return {
    name: "sqlite",
    env: { ROZ_DATA_DIR: dataDir },
    async inspect(queries) {
      const copyDir = await mkdtemp(join(tmpdir(), "roz-durability-copy-"));
      try {
        // The -shm index is rebuilt from the WAL on open; copying it could only add staleness.
        for (const suffix of ["", "-wal"]) {
          const from = join(dataDir, SQLITE_FILE_NAME + suffix);
          if (existsSync(from)) await copyFile(from, join(copyDir, SQLITE_FILE_NAME + suffix));
        }
        const db = new DatabaseSync(join(copyDir, SQLITE_FILE_NAME));
        try {
          const integrity = db
            .prepare("PRAGMA integrity_check")
            .all()
            .map((r) => String(r["integrity_check"]));
          const foreignKeys = db.prepare("PRAGMA foreign_key_check").all();
          if (foreignKeys.length > 0) integrity.push(`foreign_key_check: ${JSON.stringify(foreignKeys)}`);
          return { integrity, results: queries.map((sql) => db.prepare(sql).all() as Row[]) };
        } finally {
          db.close();
        }
      } finally {
        await rm(copyDir, { recursive: true, force: true });
      }
    },
    dispose: () => rm(dataDir, { recursive: true, force: true }),
  };
}

/** A new database (dropped by `server.stop()`) on the test PostgreSQL server. */
export async function postgresBackend(server: TestPostgres): Promise<DurabilityBackend> {
  const url = await server.createDatabase();
  return {
    name: "postgres",
    env: { DATABASE_URL: url },
    async inspect(queries) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
      await client.connect();
      try {
        const results: Row[][] = [];
        for (const sql of queries) results.push((await client.query(sql)).rows as Row[]);
        return { integrity: ["ok"], results };
      } finally {
        await client.end();
      }
    },
    // The database goes with the server (`TestPostgres.stop`).
    dispose: async () => undefined,
  };
}

/**
 * Defines a store suite on PostgreSQL: `define` gets a backend factory on the test server, or,
 * when no PostgreSQL can be had, a skipped `title` suite says so (it fails instead under
 * ROZ_REQUIRE_POSTGRES=1, as `postgresForTests` does).
 */
export async function onPostgres(title: string, define: (makeBackend: () => Promise<DurabilityBackend>) => void): Promise<void> {
  const server = await postgresForTests();
  if (server === undefined) {
    describe.skip(`${title}: postgres (no PostgreSQL available)`, () => {
      it("needs PostgreSQL", () => undefined);
    });
    return;
  }
  afterAll(() => server.stop());
  define(() => postgresBackend(server));
}
