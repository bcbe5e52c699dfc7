import { describe, expect, it } from "vitest";
import { migrations, openStore, type Migration } from "../../../src/store/index.ts";
import type { SuiteContext } from "../conformance.ts";

const broken: Migration = {
  version: 99,
  name: "broken_step",
  // The first statement succeeds; the second fails, so the first must be rolled back too.
  statements: () => ["CREATE TABLE half_done (x INTEGER)", "CREATE TABLE broken ("],
};
const fixed: Migration = { version: 99, name: "fixed_step", statements: () => ["CREATE TABLE half_done (x INTEGER)"] };

export function migrationSuite(ctx: SuiteContext): void {
  describe("migrations", () => {
    it("are idempotent: reopening a migrated database keeps its data", async () => {
      const settings = await ctx.harness.newDatabase();
      const first = await openStore(settings);
      const tenant = await first.ensureTenant("reopen");
      await first.close();
      const second = await openStore(settings);
      expect(await second.getTenant(tenant.id)).toEqual(tenant);
      await second.close();
      const third = await openStore(settings);
      expect(await third.getTenantByName("reopen")).toEqual(tenant);
      await third.close();
    });

    it("a failed migration stops startup, names itself and leaves nothing applied", async () => {
      const settings = await ctx.harness.newDatabase();
      await expect(openStore(settings, { migrations: [...migrations, broken] })).rejects.toThrow(/migration 99 \(broken_step\) failed/);
      // The released migrations were committed before it: a normal start works.
      const normal = await openStore(settings);
      await normal.ping();
      await normal.close();
      // `half_done` was rolled back with its failing migration, so creating it again succeeds.
      const repaired = await openStore(settings, { migrations: [...migrations, fixed] });
      await repaired.close();
      // Now the database is newer than the released list: an older server refuses to start.
      await expect(openStore(settings)).rejects.toThrow(/schema version 99 is newer than this server supports/);
    });

    it.runIf(ctx.harness.concurrentStores)("nodes starting together migrate once", async () => {
      const settings = await ctx.harness.newDatabase();
      const stores = await Promise.all(Array.from({ length: 4 }, () => openStore(settings)));
      const tenants = await Promise.all(stores.map((s) => s.ensureTenant("shared")));
      expect(new Set(tenants.map((t) => t.id)).size).toBe(1);
      await Promise.all(stores.map((s) => s.close()));
    });

    it("ping answers and a closed store rejects", async () => {
      const settings = await ctx.harness.newDatabase();
      const store = await openStore(settings);
      await store.ping();
      await store.close();
      await expect(store.ping()).rejects.toThrow(/closed/);
      await store.close();
    });
  });
}
