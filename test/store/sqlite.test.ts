import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteStore, openStore, SQLITE_FILE_NAME, type StoreSettings } from "../../src/store/index.ts";
import { SqliteDatabase } from "../../src/store/sqlite/database.ts";
import { batchBehaviour } from "./batch.ts";
import { defineStoreConformance } from "./conformance.ts";

const root = mkdtempSync(join(tmpdir(), "roz-store-sqlite-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

defineStoreConformance("sqlite", {
  concurrentStores: false,
  newDatabase: async () => ({ dataDir: mkdtempSync(join(root, "db-")) }),
  async integrityCheck(settings: StoreSettings) {
    const db = new DatabaseSync(join(settings.dataDir, SQLITE_FILE_NAME));
    try {
      expect(db.prepare("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }]);
      expect(db.prepare("PRAGMA foreign_key_check").all()).toEqual([]);
    } finally {
      db.close();
    }
  },
});

describe("sqlite specifics", () => {
  batchBehaviour(() => SqliteDatabase.open(join(mkdtempSync(join(root, "batch-")), "x.db")));

  it("creates the data directory on first start, with WAL journaling", async () => {
    const dataDir = join(root, "fresh", "nested", "data");
    const store = await openStore({ dataDir });
    await store.ensureTenant("t");
    await store.close();
    const db = new DatabaseSync(join(dataDir, SQLITE_FILE_NAME));
    expect(db.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
    db.close();
  });

  it("runs in its own thread: another process's write lock delays only the store, and a transaction that fails before its first statement neither waits for the lock nor blocks the store", async () => {
    const file = join(mkdtempSync(join(root, "lock-")), "x.db");
    const db = await SqliteDatabase.open(file, { busyTimeoutMs: 2000 });
    await db.run("CREATE TABLE t (v INTEGER)");
    const holder = new DatabaseSync(file);
    holder.exec("BEGIN IMMEDIATE");
    const started = performance.now();
    await expect(db.transaction(async () => Promise.reject(new Error("refused before any statement")))).rejects.toThrow("refused before any statement");
    expect(performance.now() - started).toBeLessThan(1000);
    // A write waits for the lock in the store's thread; the event loop keeps turning meanwhile.
    const write = db.run("INSERT INTO t (v) VALUES (1)");
    let turns = 0;
    const ticking = setInterval(() => turns++, 10);
    await new Promise((resolve) => setTimeout(resolve, 300));
    holder.exec("COMMIT");
    expect(await write).toBe(1);
    clearInterval(ticking);
    expect(turns).toBeGreaterThan(10);
    holder.close();
    await db.close();
  });

  it("works in memory", async () => {
    const store = await openSqliteStore(":memory:");
    expect(store.kind).toBe("sqlite");
    const tenant = await store.ensureTenant("mem");
    expect((await store.getDefaultEnvironment(tenant.id)).isDefault).toBe(true);
    await store.close();
  });
});
