// `roz keys …`: the real CLI in a child process against the same data folder as a running server.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type TestServer } from "../support/server.ts";
import { request, startAuthServer } from "../rest/support.ts";

let dataDir: string;
let server: TestServer;
const roz = (...args: string[]) => runCli(args, { ROZ_DATA_DIR: dataDir });

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "roz-cli-"));
  server = await startAuthServer({ ROZ_DATA_DIR: dataDir });
});
afterAll(async () => {
  await server?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe("roz keys", () => {
  it("create prints only the key on stdout, a hint on stderr, and the key works with its scopes", async () => {
    const created = await roz("keys", "create", "--tenant", "acme", "--scopes", "sessions", "--name", "ci");
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    expect(created.stdout).toMatch(/^roz_sk_[A-Za-z0-9_-]{43}\n$/);
    expect(created.stderr).toContain('tenant "acme"');
    expect(created.stderr).toContain("shown only this once");
    expect((await request(server.url, "GET", "/v1/sessions", { key })).status).toBe(200);
    expect((await request(server.url, "GET", "/v1/environments", { key })).status).toBe(403);

    const listed = await roz("keys", "list", "--tenant", "acme");
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(key.slice(0, 13));
    expect(listed.stdout).not.toContain(key);
    const id = /^([0-9a-f-]{36})\s/m.exec(listed.stdout)?.[1];
    expect(id).toBeDefined();
    expect(listed.stdout).toMatch(/ci\s+sessions\s.*active/);

    const revoked = await roz("keys", "revoke", "--tenant", "acme", id!);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await request(server.url, "GET", "/v1/sessions", { key })).status).toBe(401);
    expect((await roz("keys", "list", "--tenant", "acme")).stdout).toMatch(/revoked/);
  });

  it("defaults to the admin scope", async () => {
    const created = await roz("keys", "create", "--tenant", "globex");
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    for (const path of ["/v1/sessions", "/v1/environments", "/v1/auth/keys"]) {
      expect((await request(server.url, "GET", path, { key })).status, path).toBe(200);
    }
  });

  it("rejects bad usage with exit code 2 and a message", async () => {
    const cases: [string[], string][] = [
      [["keys", "create"], "--tenant is required"],
      [["keys", "create", "--tenant", "x", "--scopes", "root"], 'unknown scope "root"'],
      [["keys", "create", "--tenant", "x", "--bogus"], "bogus"],
      [["keys", "frobnicate"], "unknown keys command"],
    ];
    const results = await Promise.all(cases.map(([args]) => roz(...args)));
    for (const [i, [args, message]] of cases.entries()) {
      const result = results[i]!;
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stdout).toBe("");
    }
    expect(await server.app.store.getTenantByName("x")).toBeUndefined();
  });

  it("reports unknown tenants and keys", async () => {
    const [list, revoke] = await Promise.all([
      roz("keys", "list", "--tenant", "nobody"),
      roz("keys", "revoke", "--tenant", "acme", "00000000-0000-4000-8000-000000000000"),
    ]);
    expect(list.code).not.toBe(0);
    expect(list.stderr).toContain('no tenant named "nobody"');
    expect(revoke.code).not.toBe(0);
    expect(revoke.stderr).toContain("has no API key");
  });
});
