import { RozError } from "../../errors/index.ts";
import type { SqlDatabase } from "../sql/database.ts";
import type { Migration } from "./migration.ts";

/**
 * Brings the schema up to date, holding the engine's migration lock so that nodes starting
 * together take turns. Each pending migration runs in its own transaction with its
 * `schema_migrations` row, re-checked inside it, so a version is applied exactly once even
 * across processes. Returns the versions applied now (empty when already current).
 *
 * Throws a RozError naming the migration when one fails (nothing of it stays applied), and
 * when the database already carries a version newer than `list` knows (an older server
 * must not run against a newer schema).
 */
export async function runMigrations(db: SqlDatabase, list: readonly Migration[], now: () => number = Date.now): Promise<number[]> {
  checkOrder(list);
  return db.withMigrationLock(async (conn) => {
    await conn.run("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)");
    const rows = await conn.all<{ version: number }>("SELECT version FROM schema_migrations");
    const applied = new Set(rows.map((r) => Number(r.version)));
    const newest = Math.max(0, ...applied);
    const known = list.at(-1)?.version ?? 0;
    if (newest > known) {
      throw new RozError("internal", `database schema version ${newest} is newer than this server supports (${known}); upgrade the server`, {
        retryable: false,
      });
    }
    const done: number[] = [];
    for (const m of list) {
      if (applied.has(m.version)) continue;
      try {
        const ran = await conn.transaction(async (tx) => {
          if (await tx.get("SELECT version FROM schema_migrations WHERE version = ?", [m.version])) return false;
          for (const statement of m.statements(db.dialect)) await tx.run(statement);
          await tx.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [m.version, m.name, now()]);
          return true;
        });
        if (ran) done.push(m.version);
      } catch (err) {
        const detail = err instanceof Error ? err.message : String(err);
        throw new RozError("internal", `migration ${m.version} (${m.name}) failed: ${detail}`, { cause: err, retryable: false });
      }
    }
    return done;
  });
}

function checkOrder(list: readonly Migration[]): void {
  list.forEach((m, i) => {
    if (!Number.isInteger(m.version) || m.version < 1 || (i > 0 && m.version <= list[i - 1]!.version)) {
      throw new Error(`migrations must have ascending positive integer versions (at ${m.version} ${m.name})`);
    }
  });
}
