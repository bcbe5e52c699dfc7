// ROZ_SESSION_RETENTION_DAYS (§13): ended sessions past the limit go with their turns and
// events, in batches, by one node at a time; live and recently ended sessions stay. SQLite and
// PostgreSQL (two nodes on one database).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { RETENTION_BATCH, RETENTION_LEASE, sweepEndedSessions } from "../../src/app/session-retention.ts";
import { openStore, type Store, type StoreSettings } from "../../src/store/index.ts";
import { turnFor } from "../store/fixtures.ts";
import { postgresForTests } from "../support/postgres.ts";
import { startServer, type TestServer } from "../support/server.ts";

const pg = await postgresForTests();
afterAll(() => pg?.stop());
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const DAY = 24 * 60 * 60_000;

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "roz-retention-"));
  dirs.push(dir);
  return dir;
}

const backends: [string, () => Promise<StoreSettings>, number][] = [
  ["sqlite", async () => ({ dataDir: await tempDir() }), 1],
  ...(pg
    ? [["postgres", async () => ({ dataDir: "/unused", databaseUrl: await pg.createDatabase() }), 2] as [string, () => Promise<StoreSettings>, number]]
    : []),
];

/** Sessions of one tenant: `old` ended three days ago (with a turn and events), `recent` an hour ago, `live` still running. */
async function seed(store: Store, oldCount: number) {
  const tenant = await store.ensureTenant("retained");
  const create = () => store.createSession(tenant.id, { environmentId: "env", model: "scripted/default" });
  const old: string[] = [];
  for (let i = 0; i < oldCount; i++) {
    const s = await create();
    await store.appendTurn(tenant.id, s.id, turnFor(1, { userContent: "forgotten words" }), [{ seq: 1, payload: new Uint8Array([1]) }]);
    await store.updateSessionStatus(tenant.id, s.id, { status: (["completed", "cancelled", "error"] as const)[i % 3], endedAt: Date.now() - 3 * DAY });
    old.push(s.id);
  }
  const recent = await create();
  await store.updateSessionStatus(tenant.id, recent.id, { status: "completed", endedAt: Date.now() - 60 * 60_000 });
  const live = await create();
  await store.appendTurn(tenant.id, live.id, turnFor(1, { userContent: "forgotten words" }));
  return { tenantId: tenant.id, old, recent: recent.id, live: live.id };
}

describe.each(backends)("session retention: %s", (_name, settingsOf, nodes) => {
  it("the sweep deletes nothing while another node holds the lease, then everything past the limit, in batches", async () => {
    const store = await openStore(await settingsOf());
    try {
      const { tenantId, old, recent, live } = await seed(store, RETENTION_BATCH + 5);
      expect(await store.acquireLease(RETENTION_LEASE, "other-node", 60_000)).toBe(true);
      expect(await sweepEndedSessions(store, "this-node", 2)).toBe(0);
      expect(await store.getSession(tenantId, old[0]!)).toBeDefined();
      await store.releaseLease(RETENTION_LEASE, "other-node");
      const batches: number[] = [];
      const counting = {
        ...store,
        acquireLease: store.acquireLease,
        deleteEndedSessions: async (before: number, limit: number) => {
          const n = await store.deleteEndedSessions(before, limit);
          batches.push(n);
          return n;
        },
      };
      expect(await sweepEndedSessions(counting, "this-node", 2)).toBe(old.length);
      expect(batches).toEqual([RETENTION_BATCH, 5]);
      for (const id of old) expect(await store.getSession(tenantId, id)).toBeUndefined();
      expect(await store.listTurns(tenantId, old[0]!)).toBeUndefined();
      expect(await store.getSession(tenantId, recent)).toBeDefined();
      expect((await store.listTurns(tenantId, live))?.length).toBe(1);
      expect((await store.listSessions(tenantId, { words: ["forgotten"] })).items.map((s) => s.id)).toEqual([live]);
    } finally {
      await store.close();
    }
  });

  it(`servers with ROZ_SESSION_RETENTION_DAYS sweep within 10 s of start (${nodes} node${nodes > 1 ? "s" : ""} on one database)`, async () => {
    const settings = await settingsOf();
    const seeding = await openStore(settings);
    const { tenantId, old, recent, live } = await seed(seeding, 7);
    await seeding.close();
    const env = { ROZ_SESSION_RETENTION_DAYS: "2", ROZ_DATA_DIR: settings.dataDir, ...(settings.databaseUrl ? { DATABASE_URL: settings.databaseUrl } : {}) };
    const servers: TestServer[] = [];
    try {
      for (let i = 0; i < nodes; i++) servers.push(await startServer({ ...env, ROZ_NODE_ID: `retention-node-${i}` }));
      const store = servers[0]!.app.store;
      const deadline = Date.now() + 10_000;
      while ((await store.getSession(tenantId, old.at(-1)!)) !== undefined && Date.now() < deadline) await sleep(100);
      for (const id of old) expect(await store.getSession(tenantId, id)).toBeUndefined();
      expect(await store.getSession(tenantId, recent)).toBeDefined();
      expect(await store.getSession(tenantId, live)).toBeDefined();
    } finally {
      for (const s of servers) await s.close();
    }
  });
});
