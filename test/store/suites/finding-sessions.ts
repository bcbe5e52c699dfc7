import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import { join } from "node:path";
import {
  migrations,
  openStore,
  runMigrations,
  SQLITE_FILE_NAME,
  type SessionFilter,
  type Store,
  type StoreSettings,
  type Tenant,
} from "../../../src/store/index.ts";
import { PostgresDatabase } from "../../../src/store/postgres/database.ts";
import type { SqlDatabase } from "../../../src/store/sql/database.ts";
import { SqliteDatabase } from "../../../src/store/sqlite/database.ts";
import type { SuiteContext } from "../conformance.ts";
import { turnFor, uniqueName } from "../fixtures.ts";

/** Titles, metadata, archive, filters, full-text search, deleting ended sessions, leases: on a database of its own (deleting spans tenants). */
export function findingSessionSuite(ctx: SuiteContext): void {
  describe("finding sessions", () => {
    let store: Store;
    let settings: StoreSettings;
    beforeAll(async () => {
      settings = await ctx.harness.newDatabase();
      store = await openStore(settings);
    });
    afterAll(() => store.close());
    const tenant = () => store.ensureTenant(uniqueName("find"));
    // Each session created in a later millisecond: the time filters have something to tell apart.
    const start = async (t: Tenant, extra: { title?: string; metadata?: Record<string, string> } = {}) => {
      await sleep(3);
      return store.createSession(t.id, { environmentId: "env-1", model: "scripted/default", ...extra });
    };
    const ids = async (t: Tenant, filter: SessionFilter) => (await store.listSessions(t.id, filter)).items.map((s) => s.id);

    it("keeps title and metadata from creation; a patch sets, removes and archives", async () => {
      const t = await tenant();
      const s = await start(t, { title: "Fix the build", metadata: { team: "infra", ticket: "42" } });
      expect(s).toMatchObject({ title: "Fix the build", metadata: { team: "infra", ticket: "42" }, archived: false });
      const patched = await store.updateSession(t.id, s.id, { title: "Renamed", metadata: { ticket: null, owner: "ana" }, archived: true });
      expect(patched).toMatchObject({ title: "Renamed", metadata: { team: "infra", owner: "ana" }, archived: true });
      expect(await store.getSession(t.id, s.id)).toEqual(patched);
      expect((await store.updateSession(t.id, s.id, { title: null }))?.title).toBeUndefined();
      const other = await tenant();
      expect(await store.updateSession(other.id, s.id, { archived: false })).toBeUndefined();
    });

    it("refuses a patch that would leave more than 16 metadata keys, changing nothing", async () => {
      const t = await tenant();
      const s = await start(t, { metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, "v"])) });
      await expect(store.updateSession(t.id, s.id, { metadata: { extra: "v" }, title: "x" })).rejects.toMatchObject({ reason: "invalid_argument" });
      expect((await store.getSession(t.id, s.id))?.title).toBeUndefined();
    });

    it("filters by archived, metadata pairs, creation time and status, paging by cursor", async () => {
      const t = await tenant();
      const a = await start(t, { metadata: { team: "infra", env: "prod" } });
      const b = await start(t, { metadata: { team: "infra", env: "dev" } });
      const c = await start(t, { metadata: { team: "web" } });
      await store.updateSession(t.id, c.id, { archived: true });
      await store.updateSessionStatus(t.id, b.id, { status: "completed" });
      expect(await ids(t, { archived: false })).toEqual([b.id, a.id]);
      expect(await ids(t, { archived: true })).toEqual([c.id]);
      expect(await ids(t, {})).toEqual([c.id, b.id, a.id]);
      expect(await ids(t, { metadata: { team: "infra" } })).toEqual([b.id, a.id]);
      expect(await ids(t, { metadata: { team: "infra", env: "prod" } })).toEqual([a.id]);
      expect(await ids(t, { metadata: { team: "nobody" } })).toEqual([]);
      expect(await ids(t, { createdAfter: a.createdAt, createdBefore: c.createdAt })).toEqual([b.id]);
      expect(await ids(t, { status: "completed" })).toEqual([b.id]);
      const first = await store.listSessions(t.id, { limit: 2, metadata: { team: "infra" }, archived: false });
      expect(first.items.map((s) => s.id)).toEqual([b.id, a.id]);
      const page1 = await store.listSessions(t.id, { limit: 1 });
      const page2 = await store.listSessions(t.id, { limit: 1, cursor: page1.nextCursor });
      expect([...page1.items, ...page2.items].map((s) => s.id)).toEqual([c.id, b.id]);
    });

    it("searches titles and turns' user and assistant text with the full-text index, all words, any case", async () => {
      const t = await tenant();
      const titled = await start(t, { title: "Kubernetes upgrade" });
      const chat = await start(t);
      await store.appendTurn(t.id, chat.id, turnFor(1, { userContent: "Why does the Zeppelin float?", assistantText: "Because of helium." }));
      await store.appendTurn(t.id, chat.id, turnFor(2, { userContent: "thanks", assistantText: "You are welcome." }));
      const later = await start(t);
      await store.appendTurn(
        t.id,
        later.id,
        turnFor(1, {
          userContent: "weather",
          assistantText: "sunny",
          steered: [{ messageId: "m", content: "also tomorrow's tides", context: [], afterToolCalls: 0 }],
        }),
      );
      expect(await ids(t, { words: ["kubernetes"] })).toEqual([titled.id]);
      expect(await ids(t, { words: ["zeppelin"] })).toEqual([chat.id]);
      expect(await ids(t, { words: ["HELIUM"] })).toEqual([chat.id]);
      expect(await ids(t, { words: ["zeppelin", "helium"] })).toEqual([chat.id]);
      expect(await ids(t, { words: ["zeppelin", "kubernetes"] })).toEqual([]);
      expect(await ids(t, { words: ["tides"] })).toEqual([later.id]);
      await store.updateSession(t.id, titled.id, { title: "Postgres migration" });
      expect(await ids(t, { words: ["kubernetes"] })).toEqual([]);
      expect(await ids(t, { words: ["postgres"] })).toEqual([titled.id]);
      const other = await tenant();
      expect(await ids(other, { words: ["zeppelin"] })).toEqual([]);
      // Words that look like the engines' query syntax are only words.
      expect(await ids(t, { words: ["NOT", "OR", "body"] })).toEqual([]);
    });

    it("deletes only ended sessions that ended long enough ago, with their turns and events, in batches", async () => {
      // Sessions the tests above ended go first, so the counts below are this test's own.
      while ((await store.deleteEndedSessions(Date.now(), 100)) > 0);
      const t = await tenant();
      const old = [await start(t), await start(t), await start(t)];
      for (const s of old) {
        await store.appendTurn(t.id, s.id, turnFor(1, { userContent: "ancient words" }), [{ seq: 1, payload: new Uint8Array([1]) }]);
        await store.updateSessionStatus(t.id, s.id, { status: "completed" });
      }
      const live = await start(t);
      await store.appendTurn(t.id, live.id, turnFor(1, { userContent: "ancient words" }));
      await sleep(5);
      const cutoff = Date.now();
      await sleep(5);
      const recent = await start(t);
      await store.updateSessionStatus(t.id, recent.id, { status: "cancelled" });
      expect(await store.deleteEndedSessions(cutoff, 2)).toBe(2);
      expect(await store.deleteEndedSessions(cutoff, 2)).toBe(1);
      expect(await store.deleteEndedSessions(cutoff, 2)).toBe(0);
      expect(await ids(t, {})).toEqual([recent.id, live.id]);
      expect(await store.listTurns(t.id, old[0]!.id)).toBeUndefined();
      expect(await store.readEvents(t.id, old[0]!.id)).toBeUndefined();
      expect(await ids(t, { words: ["ancient"] })).toEqual([live.id]);
      await ctx.harness.integrityCheck(settings);
    });

    it("turns stored before the search index existed are found once the database is migrated", async () => {
      const old = await ctx.harness.newDatabase();
      const db: SqlDatabase = old.databaseUrl ? new PostgresDatabase(old.databaseUrl) : await SqliteDatabase.open(join(old.dataDir, SQLITE_FILE_NAME));
      const [tenantId, sessionId] = [crypto.randomUUID(), crypto.randomUUID()];
      try {
        await runMigrations(
          db,
          migrations.filter((m) => m.name !== "finding_sessions"),
        );
        await db.run("INSERT INTO tenants (id, name, created_at) VALUES (?, ?, 1)", [tenantId, "before-search"]);
        await db.run(
          "INSERT INTO sessions (id, tenant_id, environment_id, model, status, created_at, updated_at) VALUES (?, ?, 'env', 'm', 'completed', 1, 1)",
          [sessionId, tenantId],
        );
        await db.run(
          `INSERT INTO turns (session_id, seq, message_id, user_content, user_context, mode, assistant_text, assistant_thinking,
             input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, stop_reason, compactions, started_at, ended_at)
           VALUES (?, 1, 'm1', 'tell me about the archaeopteryx', '[]', 'react', 'a feathered dinosaur', '', 0, 0, 0, 0, 'end_turn', 0, 1, 2)`,
          [sessionId],
        );
      } finally {
        await db.close();
      }
      const migrated = await openStore(old);
      try {
        for (const word of ["archaeopteryx", "feathered"]) {
          expect((await migrated.listSessions(tenantId, { words: [word] })).items.map((s) => s.id)).toEqual([sessionId]);
        }
        expect(await migrated.getSession(tenantId, sessionId)).toMatchObject({ metadata: {}, archived: false });
      } finally {
        await migrated.close();
      }
    });

    it("a lease has one holder until it expires or is released", async () => {
      const name = uniqueName("lease");
      expect(await store.acquireLease(name, "node-a", 1000, 5000)).toBe(true);
      expect(await store.acquireLease(name, "node-b", 1000, 5500)).toBe(false);
      expect(await store.acquireLease(name, "node-a", 1000, 5900)).toBe(true);
      expect(await store.acquireLease(name, "node-b", 1000, 6800)).toBe(false);
      expect(await store.acquireLease(name, "node-b", 1000, 6900)).toBe(true);
      await store.releaseLease(name, "node-a");
      expect(await store.acquireLease(name, "node-a", 1000, 7000)).toBe(false);
      await store.releaseLease(name, "node-b");
      expect(await store.acquireLease(name, "node-a", 1000, 7000)).toBe(true);
      const racers = await Promise.all(["x", "y", "z"].map((h) => store.acquireLease(`${name}-race`, h, 1000, 8000)));
      expect(racers.filter(Boolean)).toHaveLength(1);
    });
  });
}
