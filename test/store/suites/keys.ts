import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { RozError } from "../../../src/errors/index.ts";
import type { NewApiKey } from "../../../src/store/index.ts";
import type { SuiteContext } from "../conformance.ts";

/** A key as the auth layer would make it: a random secret, its prefix and SHA-256. */
function newSecret() {
  const secret = `roz_sk_${randomBytes(24).toString("base64url")}`;
  return { secret, prefix: secret.slice(0, 12), hash: createHash("sha256").update(secret).digest("hex") };
}

const keyInput = (tenantId: string, extra: Partial<NewApiKey> = {}): NewApiKey => {
  const { prefix, hash } = newSecret();
  return { tenantId, name: "ci", prefix, hash, scopes: ["sessions:write", "admin"], ...extra };
};

export function keySuite(ctx: SuiteContext): void {
  describe("API keys", () => {
    it("stores the hash only and finds a key with its tenant by hash", async () => {
      const tenant = await ctx.tenant();
      const input = keyInput(tenant.id);
      const key = await ctx.store().createKey(input);
      expect(key).toMatchObject({ tenantId: tenant.id, name: "ci", prefix: input.prefix, scopes: input.scopes });
      expect(key).not.toHaveProperty("hash");
      expect(key.revokedAt).toBeUndefined();
      const found = await ctx.store().findKeyByHash(input.hash);
      expect(found).toEqual({ key, tenant });
      expect(await ctx.store().findKeyByHash(newSecret().hash)).toBeUndefined();
    });

    it("a duplicate hash is a conflict", async () => {
      const tenant = await ctx.tenant();
      const input = keyInput(tenant.id);
      await ctx.store().createKey(input);
      const err = await ctx
        .store()
        .createKey(input)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RozError);
      expect((err as RozError).reason).toBe("conflict");
    });

    it("revoked and expired keys are not found; revoking is tenant-scoped and idempotent", async () => {
      const [tenant, other] = [await ctx.tenant(), await ctx.tenant()];
      const input = keyInput(tenant.id);
      const key = await ctx.store().createKey(input);
      expect(await ctx.store().revokeKey(other.id, key.id)).toBe(false);
      expect(await ctx.store().findKeyByHash(input.hash)).toBeDefined();
      expect(await ctx.store().revokeKey(tenant.id, key.id)).toBe(true);
      expect(await ctx.store().findKeyByHash(input.hash)).toBeUndefined();
      const revokedAt = (await ctx.store().getKey(tenant.id, key.id))?.revokedAt;
      expect(revokedAt).toEqual(expect.any(Number));
      expect(await ctx.store().revokeKey(tenant.id, key.id)).toBe(true);
      expect((await ctx.store().getKey(tenant.id, key.id))?.revokedAt).toBe(revokedAt);
      expect(await ctx.store().revokeKey(tenant.id, "00000000-0000-0000-0000-000000000000")).toBe(false);

      const expiring = keyInput(tenant.id, { expiresAt: Date.now() + 60_000 });
      await ctx.store().createKey(expiring);
      expect(await ctx.store().findKeyByHash(expiring.hash)).toBeDefined();
      expect(await ctx.store().findKeyByHash(expiring.hash, Date.now() + 120_000)).toBeUndefined();
    });

    it("getKey and listKeys see only the tenant's keys, revoked ones included", async () => {
      const [tenant, other] = [await ctx.tenant(), await ctx.tenant()];
      const keys = [];
      for (let i = 0; i < 3; i++) keys.push(await ctx.store().createKey(keyInput(tenant.id, { name: `k${i}` })));
      await ctx.store().createKey(keyInput(other.id));
      await ctx.store().revokeKey(tenant.id, keys[0]!.id);
      expect(await ctx.store().getKey(other.id, keys[1]!.id)).toBeUndefined();
      expect(await ctx.store().getKey(tenant.id, keys[1]!.id)).toEqual(keys[1]);
      const page = await ctx.store().listKeys(tenant.id, { limit: 10 });
      expect(page.items.map((k) => k.name).sort()).toEqual(["k0", "k1", "k2"]);
      expect(page.items.find((k) => k.name === "k0")?.revokedAt).toEqual(expect.any(Number));
      expect(page.nextCursor).toBeUndefined();
      expect((await ctx.store().listKeys(other.id)).items).toHaveLength(1);
    });

    it("rotateKey replaces a key atomically and only for its tenant", async () => {
      const [tenant, other] = [await ctx.tenant(), await ctx.tenant()];
      const input = keyInput(tenant.id, { name: "deploy", scopes: ["read"] });
      const old = await ctx.store().createKey(input);
      const next = newSecret();
      expect(await ctx.store().rotateKey(other.id, old.id, next)).toBeUndefined();
      const rotated = await ctx.store().rotateKey(tenant.id, old.id, next);
      expect(rotated).toMatchObject({ name: "deploy", scopes: ["read"], prefix: next.prefix, tenantId: tenant.id });
      expect(rotated!.id).not.toBe(old.id);
      expect(await ctx.store().findKeyByHash(input.hash)).toBeUndefined();
      expect((await ctx.store().findKeyByHash(next.hash))?.key.id).toBe(rotated!.id);
      // A revoked key cannot be rotated again.
      expect(await ctx.store().rotateKey(tenant.id, old.id, newSecret())).toBeUndefined();
      // A clashing hash rolls the revocation back.
      const clash = await ctx
        .store()
        .rotateKey(tenant.id, rotated!.id, next)
        .catch((e: unknown) => e);
      expect((clash as RozError).reason).toBe("conflict");
      expect((await ctx.store().getKey(tenant.id, rotated!.id))?.revokedAt).toBeUndefined();
    });

    it("countKeys counts every key ever created, revoked ones too", async () => {
      const tenant = await ctx.tenant();
      const before = await ctx.store().countKeys();
      const key = await ctx.store().createKey(keyInput(tenant.id));
      expect(await ctx.store().countKeys()).toBe(before + 1);
      await ctx.store().revokeKey(tenant.id, key.id);
      expect(await ctx.store().countKeys()).toBe(before + 1);
    });

    it("touchKey records use at most once a minute", async () => {
      const tenant = await ctx.tenant();
      const key = await ctx.store().createKey(keyInput(tenant.id));
      const t0 = 1_700_000_000_000;
      await ctx.store().touchKey(key.id, t0);
      expect((await ctx.store().getKey(tenant.id, key.id))?.lastUsedAt).toBe(t0);
      await ctx.store().touchKey(key.id, t0 + 30_000);
      expect((await ctx.store().getKey(tenant.id, key.id))?.lastUsedAt).toBe(t0);
      await ctx.store().touchKey(key.id, t0 + 61_000);
      expect((await ctx.store().getKey(tenant.id, key.id))?.lastUsedAt).toBe(t0 + 61_000);
    });
  });
}
