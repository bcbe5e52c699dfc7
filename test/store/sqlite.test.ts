import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteStore, openStore, SQLITE_FILE_NAME, type StoreSettings } from "../../src/store/index.ts";
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
  it("creates the data directory on first start, with WAL journaling", async () => {
    const dataDir = join(root, "fresh", "nested", "data");
    const store = await openStore({ dataDir });
    await store.ensureTenant("t");
    await store.close();
    const db = new DatabaseSync(join(dataDir, SQLITE_FILE_NAME));
    expect(db.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
    db.close();
  });

  it("works in memory", async () => {
    const store = await openSqliteStore(":memory:");
    expect(store.kind).toBe("sqlite");
    const tenant = await store.ensureTenant("mem");
    expect((await store.getDefaultEnvironment(tenant.id)).isDefault).toBe(true);
    await store.close();
  });
});
