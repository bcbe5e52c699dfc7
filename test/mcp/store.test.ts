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
  });
}
