import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { openStore, type StoreSettings } from "../../src/store/index.ts";
import { PostgresDatabase } from "../../src/store/postgres/database.ts";
import { postgresForTests } from "../support/postgres.ts";
import { batchBehaviour } from "./batch.ts";
import { defineStoreConformance } from "./conformance.ts";

const server = await postgresForTests();

if (server === undefined) {
  describe.skip("Store conformance: postgres (no PostgreSQL available)", () => {
    it("needs PostgreSQL", () => undefined);
  });
} else {
  afterAll(() => server.stop());

  defineStoreConformance("postgres", {
    concurrentStores: true,
    newDatabase: async () => ({ dataDir: "/nonexistent-unused", databaseUrl: await server.createDatabase() }),
    async integrityCheck(settings: StoreSettings) {
      // The server guarantees transactional consistency; check what the schema enforces is intact.
      const client = new pg.Client({ connectionString: settings.databaseUrl });
      await client.connect();
      try {
        const orphans = await client.query(
          "SELECT COUNT(*)::int AS n FROM tool_calls c LEFT JOIN turns t ON t.session_id = c.session_id AND t.seq = c.turn_seq WHERE t.seq IS NULL",
        );
        expect(orphans.rows[0].n).toBe(0);
      } finally {
        await client.end();
      }
    },
  });

  describe("postgres specifics", () => {
    batchBehaviour(async () => new PostgresDatabase(await server.createDatabase()));

    it("openStore chooses PostgreSQL when a database URL is set", async () => {
      const store = await openStore({ dataDir: "/nonexistent-unused", databaseUrl: await server.createDatabase() });
      expect(store.kind).toBe("postgres");
      await store.ping();
      await store.close();
    });

    it("an unreachable server rejects at open", async () => {
      const url = new URL(server.url);
      url.port = "1";
      await expect(openStore({ dataDir: "/unused", databaseUrl: url.toString() })).rejects.toThrow();
    });
  });
}
