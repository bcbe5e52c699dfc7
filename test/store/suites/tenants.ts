import { describe, expect, it } from "vitest";
import type { SuiteContext } from "../conformance.ts";
import { uniqueName } from "../fixtures.ts";

export function tenantSuite(ctx: SuiteContext): void {
  describe("tenants", () => {
    it("ensureTenant creates once, also under concurrent calls", async () => {
      const name = uniqueName("acme");
      const tenants = await Promise.all(Array.from({ length: 8 }, () => ctx.store().ensureTenant(name)));
      expect(new Set(tenants.map((t) => t.id)).size).toBe(1);
      const [tenant] = tenants;
      expect(tenant).toMatchObject({ name, id: expect.any(String), createdAt: expect.any(Number) });
      expect(await ctx.store().ensureTenant(name)).toEqual(tenant);
    });

    it("looks tenants up by id and name; unknown ones are undefined", async () => {
      const tenant = await ctx.tenant();
      expect(await ctx.store().getTenant(tenant.id)).toEqual(tenant);
      expect(await ctx.store().getTenantByName(tenant.name)).toEqual(tenant);
      expect(await ctx.store().getTenant("00000000-0000-0000-0000-000000000000")).toBeUndefined();
      expect(await ctx.store().getTenant("not-a-uuid")).toBeUndefined();
      expect(await ctx.store().getTenantByName(uniqueName("nobody"))).toBeUndefined();
    });
  });
}
