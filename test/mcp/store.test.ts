import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openStore, type Store, type StoreSettings } from "../../src/store/index.ts";
import { postgresForTests } from "../support/postgres.ts";

const pgServer = await postgresForTests();
afterAll(() => pgServer?.stop());

const engines: [string, (() => Promise<StoreSettings>) | undefined][] = [
  ["sqlite", async () => ({ dataDir: mkdtempSync(join(tmpdir(), "roz-mcp-store-")) })],
  ["postgres", pgServer && (async () => ({ dataDir: "/nonexistent-unused", databaseUrl: await pgServer.createDatabase() }))],
];

for (const [engine, settingsOf] of engines) {
  describe.skipIf(settingsOf === undefined)(`MCP server store: ${engine}`, () => {
    let store: Store;
    let dataDir: string | undefined;
    const open = async () => {
      const settings = await settingsOf!();
      if (settings.databaseUrl === undefined) dataDir = settings.dataDir;
      store = await openStore(settings);
      return store;
    };
    afterAll(async () => {
      await store?.close();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it("registers, replaces, scopes names per tenant, records health and deletes", async () => {
      await open();
      const a = await store.ensureTenant("a");
      const b = await store.ensureTenant("b");
      const first = await store.putMcpServer(a.id, { name: "gh", url: "http://x/mcp", enabled: true, authKind: "bearer", sealedCredentials: "sealed" });
      expect(first).toMatchObject({ name: "gh", enabled: true, authKind: "bearer", sealedCredentials: "sealed", health: "healthy", failureCount: 0 });
      // The same name in another tenant is another server.
      await store.putMcpServer(b.id, { name: "gh", url: "http://y/mcp", enabled: false, authKind: "none" });
      // Register again replaces, and health starts over.
      await store.setMcpServerHealth(first.id, { health: "degraded", failureCount: 3, degradedAt: 1000, lastError: "boom" });
      expect(await store.getMcpServer(a.id, "gh")).toMatchObject({ health: "degraded", failureCount: 3, degradedAt: 1000, lastError: "boom" });
      const second = await store.putMcpServer(a.id, { name: "gh", url: "http://z/mcp", enabled: true, authKind: "none" });
      expect(second).toMatchObject({ url: "http://z/mcp", health: "healthy", failureCount: 0 });
      expect(second.sealedCredentials).toBeUndefined();
      expect(second.degradedAt).toBeUndefined();
      // A tenant-wide name cannot be taken by a session, and the other way round.
      await expect(store.putMcpServer(a.id, { sessionId: "s1", name: "gh", url: "http://z/mcp", enabled: true, authKind: "none" })).rejects.toMatchObject({
        code: "already_exists",
      });
      await store.putMcpServer(a.id, { sessionId: "s1", name: "mine", url: "http://s/mcp", enabled: true, authKind: "none" });
      await expect(store.putMcpServer(a.id, { sessionId: "s2", name: "mine", url: "http://s/mcp", enabled: true, authKind: "none" })).rejects.toMatchObject({
        code: "already_exists",
      });
      expect((await store.listMcpServers(a.id)).map((s) => s.name)).toEqual(["gh", "mine"]);
      expect((await store.listMcpServers(a.id, "s1")).map((s) => s.name)).toEqual(["gh", "mine"]);
      expect((await store.listMcpServers(a.id, "s2")).map((s) => s.name)).toEqual(["gh"]);
      expect((await store.listMcpServers(b.id)).map((s) => s.url)).toEqual(["http://y/mcp"]);
      await store.putMcpServer(a.id, { sessionId: "s3", name: "gone", url: "http://s/mcp", enabled: true, authKind: "none" });
      expect(await store.deleteSessionMcpServers(a.id, "s3")).toHaveLength(1);
      expect(await store.getMcpServer(a.id, "gone")).toBeUndefined();
      expect(await store.deleteMcpServer(b.id, "mine")).toBe(false);
      expect(await store.deleteMcpServer(a.id, "mine")).toBe(true);
      expect(await store.getMcpServer(a.id, "mine")).toBeUndefined();
      expect(await store.setMcpServerHealth("no-such-id", { health: "healthy", failureCount: 0, degradedAt: null, lastError: null })).toBe(false);
    });

    it("keeps pending OAuth authorizations: taken once, expired ones swept, gone with their server; stores tokens", async () => {
      const a = await store.ensureTenant("a");
      const server = await store.putMcpServer(a.id, { name: "oauthy", url: "http://x/mcp", enabled: true, authKind: "oauth" });
      const pending = (id: string, stateHash: string, expiresAt: number) => ({
        id,
        stateHash,
        tenantId: a.id,
        serverId: server.id,
        sealed: "sealed-v",
        expiresAt,
      });
      await store.putMcpOauthPending(pending("p-old", "h-old", Date.now() - 1));
      await store.putMcpOauthPending(pending("p1", "h1", Date.now() + 60_000));
      // Putting another sweeps the expired one.
      await store.putMcpOauthPending(pending("p2", "h2", Date.now() + 60_000));
      expect(await store.takeMcpOauthPending("h-old")).toBeUndefined();
      const [first, second] = await Promise.all([store.takeMcpOauthPending("h1"), store.takeMcpOauthPending("h1")]);
      expect([first, second].filter((p) => p !== undefined)).toEqual([expect.objectContaining({ id: "p1", serverId: server.id, sealed: "sealed-v" })]);
      await expect(store.putMcpOauthPending(pending("p3", "h2", Date.now() + 60_000))).rejects.toThrow();

      expect(await store.setMcpServerCredentials(server.id, "sealed-tokens")).toBe(true);
      expect((await store.getMcpServer(a.id, "oauthy"))?.sealedCredentials).toBe("sealed-tokens");
      expect(await store.setMcpServerCredentials("no-such-id", "x")).toBe(false);
      // Registering the name again (or deleting it) drops its pending authorizations.
      await store.putMcpServer(a.id, { name: "oauthy", url: "http://x/mcp", enabled: true, authKind: "oauth" });
      expect(await store.takeMcpOauthPending("h2")).toBeUndefined();
    });
  });
}
