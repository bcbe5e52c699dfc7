import { describe, expect, it } from "vitest";
import { RozError } from "../../../src/errors/index.ts";
import { openStore } from "../../../src/store/index.ts";
import type { SuiteContext } from "../conformance.ts";

const rules = [
  { toolPattern: "shell_*", policy: "require_confirmation" as const, category: "physical", reason: "runs commands" },
  { toolPattern: "rm", policy: "deny" as const },
];

export function environmentSuite(ctx: SuiteContext): void {
  describe("environments", () => {
    it("create, get, update, delete round-trip every field", async () => {
      const tenant = await ctx.tenant();
      const env = await ctx.store().createEnvironment(tenant.id, {
        name: "robots",
        kind: "edge",
        defaultModel: "openai/gpt-4.1-mini",
        instructions: "be careful",
        permissions: rules,
        toolDefaults: { shell_run: { timeoutMs: 5000 } },
      });
      expect(env).toMatchObject({
        tenantId: tenant.id,
        name: "robots",
        kind: "edge",
        defaultModel: "openai/gpt-4.1-mini",
        instructions: "be careful",
        permissions: rules,
        toolDefaults: { shell_run: { timeoutMs: 5000 } },
        isDefault: false,
      });
      expect(await ctx.store().getEnvironment(tenant.id, env.id)).toEqual(env);

      const updated = await ctx.store().updateEnvironment(tenant.id, env.id, { name: "arms", defaultModel: null, permissions: [] });
      expect(updated).toMatchObject({ name: "arms", kind: "edge", defaultModel: undefined, instructions: "be careful", permissions: [] });
      expect(updated!.updatedAt).toBeGreaterThanOrEqual(env.updatedAt);
      expect(await ctx.store().getEnvironment(tenant.id, env.id)).toEqual(updated);

      expect(await ctx.store().deleteEnvironment(tenant.id, env.id)).toBe(true);
      expect(await ctx.store().getEnvironment(tenant.id, env.id)).toBeUndefined();
      expect(await ctx.store().deleteEnvironment(tenant.id, env.id)).toBe(false);
    });

    it("names are unique per tenant only", async () => {
      const [tenant, other] = [await ctx.tenant(), await ctx.tenant()];
      await ctx.store().createEnvironment(tenant.id, { name: "lab" });
      const dup = await ctx
        .store()
        .createEnvironment(tenant.id, { name: "lab" })
        .catch((e: unknown) => e);
      expect(dup).toBeInstanceOf(RozError);
      expect((dup as RozError).reason).toBe("conflict");
      await expect(ctx.store().createEnvironment(other.id, { name: "lab" })).resolves.toMatchObject({ name: "lab" });
      const second = await ctx.store().createEnvironment(tenant.id, { name: "lab-2" });
      const rename = await ctx
        .store()
        .updateEnvironment(tenant.id, second.id, { name: "lab" })
        .catch((e: unknown) => e);
      expect((rename as RozError).reason).toBe("conflict");
    });

    it("another tenant's environment behaves as unknown", async () => {
      const [tenant, other] = [await ctx.tenant(), await ctx.tenant()];
      const env = await ctx.store().createEnvironment(tenant.id, { name: "private" });
      expect(await ctx.store().getEnvironment(other.id, env.id)).toBeUndefined();
      expect(await ctx.store().updateEnvironment(other.id, env.id, { name: "stolen" })).toBeUndefined();
      expect(await ctx.store().deleteEnvironment(other.id, env.id)).toBe(false);
      expect((await ctx.store().listEnvironments(other.id)).items).toEqual([]);
      expect(await ctx.store().getEnvironment(tenant.id, env.id)).toEqual(env);
    });

    it("findDefaultEnvironment only finds: nothing is created until getDefaultEnvironment", async () => {
      const tenant = await ctx.tenant();
      expect(await ctx.store().findDefaultEnvironment(tenant.id)).toBeUndefined();
      expect((await ctx.store().listEnvironments(tenant.id)).items).toEqual([]);
      const def = await ctx.store().getDefaultEnvironment(tenant.id);
      expect(await ctx.store().findDefaultEnvironment(tenant.id)).toEqual(def);
    });

    it("the default environment is created once, also under concurrent calls", async () => {
      const tenant = await ctx.tenant();
      const envs = await Promise.all(Array.from({ length: 12 }, () => ctx.store().getDefaultEnvironment(tenant.id)));
      expect(new Set(envs.map((e) => e.id)).size).toBe(1);
      expect(envs[0]).toMatchObject({ name: "default", isDefault: true, permissions: [], toolDefaults: {} });
      const all = (await ctx.store().listEnvironments(tenant.id)).items;
      expect(all.filter((e) => e.isDefault)).toHaveLength(1);
    });

    it.runIf(ctx.harness.concurrentStores)("the default environment is created once across nodes", async () => {
      const tenant = await ctx.tenant();
      const nodes = await Promise.all([openStore(ctx.settings()), openStore(ctx.settings()), openStore(ctx.settings())]);
      const envs = await Promise.all(Array.from({ length: 12 }, (_, i) => nodes[i % nodes.length]!.getDefaultEnvironment(tenant.id)));
      expect(new Set(envs.map((e) => e.id)).size).toBe(1);
      await Promise.all(nodes.map((n) => n.close()));
    });

    it("a taken `default` name gives the default environment another name; one default at a time", async () => {
      const tenant = await ctx.tenant();
      const plain = await ctx.store().createEnvironment(tenant.id, { name: "default" });
      const def = await ctx.store().getDefaultEnvironment(tenant.id);
      expect(def).toMatchObject({ name: "default-2", isDefault: true });
      expect(def.id).not.toBe(plain.id);

      const promoted = await ctx.store().updateEnvironment(tenant.id, plain.id, { isDefault: true });
      expect(promoted?.isDefault).toBe(true);
      expect((await ctx.store().getEnvironment(tenant.id, def.id))?.isDefault).toBe(false);
      expect((await ctx.store().getDefaultEnvironment(tenant.id)).id).toBe(plain.id);

      const created = await ctx.store().createEnvironment(tenant.id, { name: "newest", isDefault: true });
      expect((await ctx.store().getDefaultEnvironment(tenant.id)).id).toBe(created.id);
      const defaults = (await ctx.store().listEnvironments(tenant.id)).items.filter((e) => e.isDefault);
      expect(defaults.map((e) => e.id)).toEqual([created.id]);
      // Updating an unknown id changes nothing, not even the current default.
      expect(await ctx.store().updateEnvironment(tenant.id, "00000000-0000-0000-0000-000000000000", { isDefault: true })).toBeUndefined();
      expect((await ctx.store().getDefaultEnvironment(tenant.id)).id).toBe(created.id);
    });
  });
}
