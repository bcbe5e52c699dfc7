// The auth building blocks on their own: key format, scopes, bind policy, token buckets, and
// the authenticator against a real SQLite store.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRateLimits, RateLimiter } from "../../src/app/rate-limit.ts";
import {
  Authenticator,
  bearerToken,
  checkBindPolicy,
  grantableScopes,
  hashSecret,
  issueKey,
  looksLikeSecret,
  newSecret,
  rotateIssuedKey,
} from "../../src/auth/index.ts";
import { RozError } from "../../src/errors/index.ts";
import { openStore, type Store } from "../../src/store/index.ts";

const reasonOf = async (run: () => unknown): Promise<string> => {
  try {
    await run();
    return "none";
  } catch (err) {
    return err instanceof RozError ? err.reason : String(err);
  }
};

describe("API keys", () => {
  it("are roz_sk_ + 43 base64url characters, shown prefix, SHA-256 hash", () => {
    const a = newSecret();
    const b = newSecret();
    expect(a.secret).toMatch(/^roz_sk_[A-Za-z0-9_-]{43}$/);
    expect(a.secret).not.toBe(b.secret);
    expect(a.secret.startsWith(a.prefix)).toBe(true);
    expect(a.prefix.length).toBeLessThan(20);
    expect(a.hash).toBe(hashSecret(a.secret));
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(looksLikeSecret(a.secret)).toBe(true);
    expect(looksLikeSecret(`${a.secret}x`)).toBe(false);
  });

  it("are read from a Bearer authorization header only", () => {
    expect(bearerToken("Bearer roz_sk_x")).toBe("roz_sk_x");
    expect(bearerToken("bearer   roz_sk_x ")).toBe("roz_sk_x");
    expect(bearerToken("Basic abc")).toBeUndefined();
    expect(bearerToken("Bearer")).toBeUndefined();
    expect(bearerToken(null)).toBeUndefined();
  });
});

describe("scopes", () => {
  it("a key grants only what it has; only admin grants admin", async () => {
    expect(grantableScopes({ scopes: ["admin"] }, ["tasks", "sessions", "tasks"])).toEqual(["sessions", "tasks"]);
    expect(grantableScopes({ scopes: ["keys", "sessions"] }, ["sessions"])).toEqual(["sessions"]);
    expect(await reasonOf(() => grantableScopes({ scopes: ["keys", "sessions"] }, ["tasks"]))).toBe("permission_denied");
    expect(await reasonOf(() => grantableScopes({ scopes: ["keys"] }, ["admin"]))).toBe("permission_denied");
    expect(await reasonOf(() => grantableScopes({ scopes: ["admin"] }, ["root"]))).toBe("invalid_argument");
    expect(await reasonOf(() => grantableScopes({ scopes: ["admin"] }, []))).toBe("invalid_argument");
  });
});

describe("bind policy", () => {
  const base = { host: "127.0.0.1", loopback: true, mode: "required" as const, keyCount: 0 };
  it("warns on loopback without keys, and is silent with keys", () => {
    expect(checkBindPolicy(base).warning).toContain("OPEN");
    expect(checkBindPolicy({ ...base, keyCount: 1 })).toEqual({});
  });
  it("refuses a non-loopback address without keys unless auth is disabled on purpose", async () => {
    const wide = { ...base, host: "0.0.0.0", loopback: false };
    expect(await reasonOf(() => checkBindPolicy(wide))).toBe("config_invalid");
    expect(checkBindPolicy({ ...wide, keyCount: 2 })).toEqual({});
    expect(checkBindPolicy({ ...wide, mode: "disabled" }).warning).toContain("0.0.0.0");
  });
});

describe("RateLimiter", () => {
  it("allows a burst of perMinute, then refills at perMinute per minute, per key", () => {
    let now = 1_000_000;
    const limiter = new RateLimiter(3, () => now);
    expect([1, 2, 3].map(() => limiter.take("a").ok)).toEqual([true, true, true]);
    const denied = limiter.take("a");
    expect(denied).toEqual({ ok: false, retryAfterSeconds: 20 });
    expect(limiter.take("b").ok).toBe(true);
    now += 19_000;
    expect(limiter.take("a").ok).toBe(false);
    now += 1_000;
    expect(limiter.take("a").ok).toBe(true);
    now += 10 * 60_000;
    expect([1, 2, 3, 4].map(() => limiter.take("a").ok)).toEqual([true, true, true, false]);
  });

  it("is off at 0 and throws rate_limited with retry_after_seconds for REST", async () => {
    expect(Array.from({ length: 1000 }, () => new RateLimiter(0).take("a").ok).every(Boolean)).toBe(true);
    const limits = createRateLimits({ rateLimitPerMinute: 1, sessionRateLimitPerMinute: 1 }, () => 0);
    const principal = { tenantId: "t", keyId: "k", scopes: [] };
    limits.rest(principal);
    let error: unknown;
    try {
      limits.rest(principal);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(RozError);
    expect((error as RozError).reason).toBe("rate_limited");
    expect((error as RozError).details).toEqual({ retry_after_seconds: 60 });
    // Separate budgets: REST use does not spend session starts; open mode is per tenant.
    expect(limits.allowSessionStart(principal)).toBe(true);
    expect(limits.allowSessionStart(principal)).toBe(false);
    expect(limits.allowSessionStart({ tenantId: "t", scopes: [] })).toBe(true);
  });
});

describe("Authenticator over SQLite", () => {
  let dir: string;
  let store: Store;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "roz-authn-"));
    store = await openStore({ dataDir: dir });
  });
  afterAll(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("runs open on loopback until a key exists, re-counting at most every recheckMs; a request with an existing key ends it at once", async () => {
    let now = 1_000;
    const ended: number[] = [];
    const auth = new Authenticator({ store, mode: "required", loopback: true, recheckMs: 5_000, now: () => now, onOpenModeEnded: () => ended.push(now) });
    const open = await auth.authenticate(null, "sessions");
    const tenant = await store.getTenantByName("default");
    expect(open).toEqual({ tenantId: tenant!.id, scopes: ["sessions", "tasks", "environments", "keys", "mcp", "admin"] });
    const acme = await store.ensureTenant("acme");
    const { key, secret } = await issueKey(store, { tenantId: acme.id, name: "k", scopes: ["sessions"] });
    // Within the recheck interval the cached answer stands for requests without a key (or with an unknown one).
    now += 1_000;
    expect(await auth.isOpen()).toBe(true);
    expect(await auth.authenticate(`Bearer roz_sk_${"x".repeat(43)}`, "sessions")).toEqual(open);
    expect(ended).toEqual([]);
    // The key's first request: its own tenant, its use recorded, and the server needs keys from now on.
    const principal = await auth.authenticate(`Bearer ${secret}`, "sessions");
    expect(principal).toMatchObject({ tenantId: acme.id, keyId: key.id });
    expect(ended).toEqual([2_000]);
    await expect.poll(async () => (await store.getKey(acme.id, key.id))?.lastUsedAt).toBe(2_000);
    expect(await auth.isOpen()).toBe(false);
    expect(await reasonOf(() => auth.authenticate(null, "sessions"))).toBe("unauthenticated");
    expect(await reasonOf(() => auth.authenticate(`Bearer ${secret}`, "environments"))).toBe("permission_denied");
    // A server that keys closed at its first count never served open: nothing ended.
    const restarted = new Authenticator({ store, mode: "required", loopback: true, onOpenModeEnded: () => ended.push(-1) });
    expect(await restarted.isOpen()).toBe(false);
    expect(ended).toEqual([2_000]);
  });

  it("closes at once on keysChanged, never reopens, and is always closed off loopback", async () => {
    const auth = new Authenticator({ store, mode: "required", loopback: true });
    expect(await auth.isOpen()).toBe(false); // keys exist in this store by now
    // A store that never has keys (only countKeys is reached on these paths).
    const keyless = { countKeys: async () => 0 } as unknown as Store;
    const wide = new Authenticator({ store: keyless, mode: "required", loopback: false });
    expect(await wide.isOpen()).toBe(false);
    const fresh = new Authenticator({ store: keyless, mode: "required", loopback: true, recheckMs: 60_000 });
    expect(await fresh.isOpen()).toBe(true);
    fresh.keysChanged();
    expect(await fresh.isOpen()).toBe(false);
    const disabled = new Authenticator({ store, mode: "disabled", loopback: false });
    disabled.keysChanged();
    expect(await disabled.isOpen()).toBe(true);
  });

  it("rejects revoked, rotated-out and expired keys, and records use", async () => {
    const auth = new Authenticator({ store, mode: "required", loopback: false });
    const acme = await store.ensureTenant("acme");
    const issued = await issueKey(store, { tenantId: acme.id, name: "r", scopes: ["admin"] });
    await auth.authenticate(`Bearer ${issued.secret}`, "keys");
    await expect.poll(async () => (await store.getKey(acme.id, issued.key.id))?.lastUsedAt).toBeDefined();
    const rotated = await rotateIssuedKey(store, acme.id, issued.key.id);
    expect(await reasonOf(() => auth.authenticate(`Bearer ${issued.secret}`, "keys"))).toBe("unauthenticated");
    expect((await auth.authenticate(`Bearer ${rotated!.secret}`, "keys")).keyId).toBe(rotated!.key.id);
    await store.revokeKey(acme.id, rotated!.key.id);
    expect(await reasonOf(() => auth.authenticate(`Bearer ${rotated!.secret}`, "keys"))).toBe("unauthenticated");
    const old = await issueKey(store, { tenantId: acme.id, name: "e", scopes: ["admin"], expiresAt: Date.now() - 1 });
    expect(await reasonOf(() => auth.authenticate(`Bearer ${old.secret}`, "keys"))).toBe("unauthenticated");
  });
});
