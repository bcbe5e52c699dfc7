// /v1/auth/keys over real HTTP: secrets shown once, scopes that cannot grow, rotation, revocation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../support/server.ts";
import { client, makeKey, startAuthServer, type TestKey } from "./support.ts";

let server: TestServer;
let admin: TestKey;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  server = await startAuthServer();
  admin = await makeKey(server, "acme");
  api = client(server, admin.secret);
});
afterAll(async () => {
  await server?.close();
});

const create = (key: string, body: unknown) => client(server, key).post("/v1/auth/keys", { body });

describe("/v1/auth/keys", () => {
  it("creates a key whose secret appears once; listings never carry a secret", async () => {
    const created = await create(admin.secret, { name: "ci", scopes: ["sessions"] });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: "ci", scopes: ["sessions"] });
    expect(created.json.key).toMatch(/^roz_sk_[A-Za-z0-9_-]{43}$/);
    expect(created.json.key.startsWith(created.json.prefix)).toBe(true);

    const one = await api.get(`/v1/auth/keys/${created.json.id}`);
    expect(one.status).toBe(200);
    expect(one.json.key).toBeUndefined();
    expect(one.text).not.toContain(created.json.key);
    const list = await api.get("/v1/auth/keys");
    expect(list.text).not.toContain(created.json.key);
    expect(list.json.items.map((k: { id: string }) => k.id)).toContain(created.json.id);
    for (const k of list.json.items) expect(Object.keys(k).sort()).toEqual(expect.arrayContaining(["created_at", "id", "name", "prefix", "scopes"]));

    const use = client(server, created.json.key);
    expect((await use.get("/v1/sessions")).status).toBe(200);
    expect((await use.get("/v1/environments")).status).toBe(403);
    await expect.poll(async () => (await api.get(`/v1/auth/keys/${created.json.id}`)).json.last_used_at).toBeDefined();
  });

  it("a key cannot grant scopes it does not have, and defaults to its own", async () => {
    const keysAndSessions = (await create(admin.secret, { scopes: ["keys", "sessions"] })).json.key as string;
    const denied = await create(keysAndSessions, { scopes: ["environments"] });
    expect(denied.status).toBe(403);
    expect(denied.json.error.code).toBe("permission_denied");
    expect(denied.json.error.message).toContain("environments");
    expect((await create(keysAndSessions, { scopes: ["admin"] })).status).toBe(403);
    expect((await create(keysAndSessions, { scopes: ["sessions"] })).json.scopes).toEqual(["sessions"]);
    expect((await create(keysAndSessions, {})).json.scopes).toEqual(["keys", "sessions"]);
    expect((await create(admin.secret, { scopes: ["root"] })).status).toBe(400);
    expect((await create(admin.secret, { scopes: [] })).status).toBe(400);
  });

  it("expires_at must be a future RFC 3339 time", async () => {
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const ok = await create(admin.secret, { expires_at: future });
    expect(ok.status).toBe(201);
    expect(ok.json.expires_at).toBe(future);
    const past = await create(admin.secret, { expires_at: "2001-01-01T00:00:00Z" });
    expect(past.status).toBe(400);
    expect(past.json.error.details.field).toBe("body.expires_at");
    expect((await create(admin.secret, { expires_at: "tomorrow" })).status).toBe(400);
  });

  it("rotate issues a new secret and the old one stops working", async () => {
    const old = (await create(admin.secret, { name: "rotating", scopes: ["sessions"] })).json;
    const rotated = await api.post(`/v1/auth/keys/${old.id}/rotate`);
    expect(rotated.status).toBe(201);
    expect(rotated.json).toMatchObject({ name: "rotating", scopes: ["sessions"] });
    expect(rotated.json.id).not.toBe(old.id);
    expect(rotated.json.key).not.toBe(old.key);
    expect((await client(server, old.key).get("/v1/sessions")).status).toBe(401);
    expect((await client(server, rotated.json.key).get("/v1/sessions")).status).toBe(200);
    expect((await api.get(`/v1/auth/keys/${old.id}`)).json.revoked_at).toBeDefined();
    const again = await api.post(`/v1/auth/keys/${old.id}/rotate`);
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe("conflict");
  });

  it("rotating a key with more scopes than the caller is refused", async () => {
    const keysOnly = (await create(admin.secret, { scopes: ["keys"] })).json.key as string;
    const powerful = (await create(admin.secret, { scopes: ["environments"] })).json;
    const reply = await client(server, keysOnly).post(`/v1/auth/keys/${powerful.id}/rotate`);
    expect(reply.status).toBe(403);
    expect((await client(server, powerful.key).get("/v1/environments")).status).toBe(200);
  });

  it("revoke (POST …/revoke or DELETE) is idempotent and takes effect at once", async () => {
    const a = (await create(admin.secret, { scopes: ["sessions"] })).json;
    const revoked = await api.post(`/v1/auth/keys/${a.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.json.revoked_at).toBeDefined();
    expect((await client(server, a.key).get("/v1/sessions")).status).toBe(401);
    const twice = await api.post(`/v1/auth/keys/${a.id}/revoke`);
    expect(twice.json.revoked_at).toBe(revoked.json.revoked_at);

    const b = (await create(admin.secret, { scopes: ["sessions"] })).json;
    const deleted = await api.delete(`/v1/auth/keys/${b.id}`);
    expect(deleted.status).toBe(204);
    expect((await client(server, b.key).get("/v1/sessions")).status).toBe(401);
    expect((await api.delete(`/v1/auth/keys/${b.id}`)).status).toBe(204);
    expect((await api.get(`/v1/auth/keys/${b.id}`)).json.revoked_at).toBeDefined();
  });

  it("a key can revoke itself", async () => {
    const self = (await create(admin.secret, { scopes: ["keys"] })).json;
    expect((await client(server, self.key).delete(`/v1/auth/keys/${self.id}`)).status).toBe(204);
    expect((await client(server, self.key).get("/v1/auth/keys")).status).toBe(401);
  });
});
