// When the server runs without credentials: loopback before the first key, ROZ_AUTH=disabled,
// and the refusals for non-loopback addresses (the real CLI in a child process).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, spawnServer, startServer } from "../support/server.ts";
import { client, makeKey, request, startAuthServer } from "../rest/support.ts";

const dirs: string[] = [];
const tempDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), "roz-auth-"));
  dirs.push(dir);
  return dir;
};
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** Polls `check` until it returns true (generous deadline for a busy machine). */
async function eventually(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("loopback, ROZ_AUTH=required", () => {
  it("runs open as tenant default until the first key is created through REST, then closes at once", async () => {
    const server = await startAuthServer();
    try {
      const open = client(server);
      const env = await open.post("/v1/environments", { body: { name: "made-while-open" } });
      expect(env.status).toBe(201);
      const created = await open.post("/v1/auth/keys", { body: { name: "first" } });
      expect(created.status).toBe(201);
      expect(created.json.key).toMatch(/^roz_sk_[A-Za-z0-9_-]{43}$/);
      expect(created.json.scopes).toContain("admin");

      expect((await open.get("/v1/environments")).status).toBe(401);
      const listed = await client(server, created.json.key).get("/v1/environments");
      expect(listed.status).toBe(200);
      // The key belongs to the open-mode tenant: it sees what was made while open.
      expect(listed.json.items.map((e: { name: string }) => e.name)).toContain("made-while-open");
      const tenant = await server.app.store.getTenantByName("default");
      expect(tenant).toBeDefined();
    } finally {
      await server.close();
    }
  });

  it("closes within seconds when the CLI creates a key in another process", async () => {
    const dataDir = await tempDir();
    const server = await startAuthServer({ ROZ_DATA_DIR: dataDir });
    try {
      expect((await request(server.url, "GET", "/v1/sessions")).status).toBe(200);
      const cli = await runCli(["keys", "create", "--tenant", "acme"], { ROZ_DATA_DIR: dataDir });
      expect(cli.code, cli.stderr).toBe(0);
      const key = cli.stdout.trim();
      await eventually(async () => (await request(server.url, "GET", "/v1/sessions")).status === 401);
      expect((await request(server.url, "GET", "/v1/sessions", { key })).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it("ends at once at the first request with a key made outside the server: it acts as the key's tenant and counts as its use", async () => {
    const server = await startAuthServer();
    try {
      // Open: the server counts keys again only a while after this request.
      expect((await request(server.url, "GET", "/v1/sessions")).status).toBe(200);
      // Straight in the store, as `roz keys create` in another process does.
      const key = await makeKey(server, "acme");
      expect((await request(server.url, "POST", "/v1/environments", { key: key.secret, body: { name: "first-use" } })).status).toBe(201);
      const mine = client(server, key.secret);
      await expect.poll(async () => (await mine.get(`/v1/auth/keys/${key.id}`)).json?.last_used_at).toBeDefined();
      expect((await mine.get("/v1/environments")).json.items.map((e: { name: string }) => e.name)).toContain("first-use");
      expect((await request(server.url, "GET", "/v1/sessions")).status).toBe(401);
    } finally {
      await server.close();
    }
  });

  it("stays closed after every key was revoked", async () => {
    const server = await startAuthServer();
    try {
      const key = await makeKey(server, "acme");
      await server.app.store.revokeKey(key.tenantId, key.id);
      expect((await request(server.url, "GET", "/v1/sessions")).status).toBe(401);
    } finally {
      await server.close();
    }
  });
});

describe("ROZ_AUTH=disabled", () => {
  it("serves every request as tenant default with all scopes, even when keys exist", async () => {
    const server = await startServer({ ROZ_AUTH: "disabled" });
    try {
      await makeKey(server, "acme", ["tasks"]);
      const api = client(server);
      expect((await api.get("/v1/sessions")).status).toBe(200);
      expect((await api.post("/v1/environments", { body: { name: "e" } })).status).toBe(201);
      expect((await api.get("/v1/auth/keys")).status).toBe(200);
      // Keys created now do not switch authentication on.
      expect((await api.post("/v1/auth/keys", { body: {} })).status).toBe(201);
      expect((await api.get("/v1/sessions")).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe("non-loopback addresses", () => {
  it("refuse to start without any key when auth is required", async () => {
    const result = await runCli([], { ROZ_HOST: "0.0.0.0", ROZ_PORT: "0", ROZ_AUTH: "required", ROZ_DATA_DIR: await tempDir() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("refusing to listen on the non-loopback address 0.0.0.0");
    expect(result.stderr).toContain("roz keys create");
  });

  it("start open when ROZ_AUTH=disabled says so explicitly, and log a warning", async () => {
    const server = await spawnServer({ ROZ_HOST: "0.0.0.0", ROZ_AUTH: "disabled" });
    try {
      const warning = server.logLines().find((l) => l["level"] === 40 && String(l["msg"]).includes("authentication is disabled"));
      expect(warning).toBeDefined();
      expect((await request(`http://127.0.0.1:${server.port}`, "GET", "/v1/sessions")).status).toBe(200);
    } finally {
      await server.dispose();
    }
  });

  it("start with auth required once a key exists, and demand it", async () => {
    const dataDir = await tempDir();
    const cli = await runCli(["keys", "create", "--tenant", "ops"], { ROZ_DATA_DIR: dataDir });
    expect(cli.code, cli.stderr).toBe(0);
    const server = await spawnServer({ ROZ_HOST: "0.0.0.0", ROZ_AUTH: "required", ROZ_DATA_DIR: dataDir });
    try {
      const url = `http://127.0.0.1:${server.port}`;
      expect((await request(url, "GET", "/v1/sessions")).status).toBe(401);
      expect((await request(url, "GET", "/v1/sessions", { key: cli.stdout.trim() })).status).toBe(200);
    } finally {
      await server.dispose();
    }
  });
});
