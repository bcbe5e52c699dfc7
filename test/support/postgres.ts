/**
 * A PostgreSQL server for tests: the one named by `ROZ_TEST_DATABASE_URL`, else a throwaway
 * cluster started here from the installed binaries (initdb in a temp dir,
 * run as the `postgres` user when we are root, loopback only, trust auth), else none.
 *
 * `postgresForTests()` is what test files call: it returns undefined (after a visible
 * `console.warn`) when no server can be had, and throws instead when `ROZ_REQUIRE_POSTGRES=1`.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";

const run = promisify(execFile);

export interface TestPostgres {
  /** A URL of the server's maintenance database (tests create their own databases). */
  url: string;
  /** `env` (given by the environment) or `throwaway` (started here). */
  source: "env" | "throwaway";
  /** Creates a new empty database (or, without CREATEDB rights, a schema) and returns its URL. */
  createDatabase(): Promise<string>;
  /** Drops what `createDatabase` made and stops a throwaway cluster. Idempotent. */
  stop(): Promise<void>;
}

/** See the module comment. `ROZ_REQUIRE_POSTGRES=1` turns "unavailable" into a thrown error. */
export async function postgresForTests(): Promise<TestPostgres | undefined> {
  const required = process.env.ROZ_REQUIRE_POSTGRES === "1";
  let reason: string;
  try {
    const found = await findPostgres();
    if (found.pg !== undefined) return found.pg;
    reason = found.reason;
  } catch (err) {
    reason = err instanceof Error ? err.message : String(err);
  }
  if (required) throw new Error(`PostgreSQL required (ROZ_REQUIRE_POSTGRES=1) but unavailable: ${reason}`);
  console.warn(`[postgres] tests skipped: ${reason} (set ROZ_TEST_DATABASE_URL, or install PostgreSQL server binaries)`);
  return undefined;
}

/**
 * Uses `ROZ_TEST_DATABASE_URL` when set (it must answer), else starts a throwaway cluster.
 * Never `DATABASE_URL`: that is a developer's real database, and tests create and drop
 * databases on the server they are given.
 */
export async function findPostgres(env: Record<string, string | undefined> = process.env): Promise<{ pg: TestPostgres } | { pg?: undefined; reason: string }> {
  const url = env.ROZ_TEST_DATABASE_URL;
  if (url) {
    await query(url, "SELECT 1");
    return { pg: serverAt(url, "env", async () => undefined) };
  }
  const bin = findBinaries();
  if (bin === undefined) return { reason: "no PostgreSQL server binaries (initdb, pg_ctl) found" };
  return { pg: await startThrowaway(bin) };
}

async function query(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function serverAt(url: string, source: TestPostgres["source"], shutdown: () => Promise<void>): TestPostgres {
  const databases: string[] = [];
  const schemas: string[] = [];
  let stopped = false;
  return {
    url,
    source,
    async createDatabase() {
      const name = `roz_test_${randomBytes(6).toString("hex")}`;
      try {
        await query(url, `CREATE DATABASE ${name}`);
        databases.push(name);
        const u = new URL(url);
        u.pathname = `/${name}`;
        return u.toString();
      } catch (err) {
        // 42501: no CREATEDB right; a schema on the given database isolates just as well.
        if ((err as { code?: unknown }).code !== "42501") throw err;
        await query(url, `CREATE SCHEMA ${name}`);
        schemas.push(name);
        const u = new URL(url);
        u.searchParams.set("options", `-c search_path=${name}`);
        return u.toString();
      }
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (source === "env") {
        for (const name of databases) await query(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
        for (const name of schemas) await query(url, `DROP SCHEMA IF EXISTS ${name} CASCADE`).catch(() => undefined);
      }
      await shutdown();
    },
  };
}

/** The newest `/usr/lib/postgresql/<v>/bin` with initdb, else `ROZ_PG_BIN`, else none. */
function findBinaries(): string | undefined {
  const candidates: string[] = [];
  if (process.env.ROZ_PG_BIN) candidates.push(process.env.ROZ_PG_BIN);
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((v) => join(debian, v, "bin")));
  }
  return candidates.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** PostgreSQL refuses to run as root: as root, run its tools as `postgres` (or `nobody`). */
async function runAsUser(): Promise<{ name: string; uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ["postgres", "nobody"]) {
    try {
      const uid = Number((await run("id", ["-u", name])).stdout.trim());
      const gid = Number((await run("id", ["-g", name])).stdout.trim());
      return { name, uid, gid };
    } catch {
      // try the next user
    }
  }
  throw new Error("running as root and neither a postgres nor a nobody user exists");
}

async function startThrowaway(bin: string): Promise<TestPostgres> {
  const user = await runAsUser();
  const tool = (name: string, args: string[]) =>
    user === undefined ? run(join(bin, name), args) : run("runuser", ["-u", user.name, "--", join(bin, name), ...args]);
  const dir = mkdtempSync(join(tmpdir(), "roz-pg-"));
  if (user !== undefined) chownSync(dir, user.uid, user.gid);
  const data = join(dir, "data");
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    await tool("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]);
    let lastError: unknown;
    // Another process may grab the free port between our probe and the server's bind: retry.
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      try {
        await tool("pg_ctl", [
          "-D",
          data,
          "-l",
          join(dir, "server.log"),
          "-w",
          "-t",
          "60",
          "-o",
          `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200`,
          "start",
        ]);
        const stop = async () => {
          await tool("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => undefined);
          cleanup();
        };
        return serverAt(`postgres://postgres@127.0.0.1:${port}/postgres`, "throwaway", stop);
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError;
  } catch (err) {
    cleanup();
    const stderr = (err as { stderr?: string }).stderr;
    throw new Error(`could not start a throwaway PostgreSQL from ${bin}: ${stderr?.trim() || String(err)}`, { cause: err });
  }
}
