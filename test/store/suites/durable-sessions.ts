import { describe, expect, it } from "vitest";
import { sharedUtf8, TextParts } from "../../../src/domain/index.ts";
import type { Tenant } from "../../../src/store/index.ts";
import { SUITE_RETENTION, type SuiteContext } from "../conformance.ts";
import { turnFor, uniqueName } from "../fixtures.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const events = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => ({ seq: from + i, payload: bytes(`e${from + i}`) }));

/** Nodes, heartbeats, adoption and the state a session needs to continue in another process. */
export function durableSessionSuite(ctx: SuiteContext): void {
  const newSession = (tenant: Tenant, nodeId?: string) =>
    ctx.store().createSession(tenant.id, { environmentId: "env", model: "scripted/default", ...(nodeId ? { nodeId } : {}) });

  describe("durable sessions", () => {
    it("a session's owner is alive while its node heart-beats, and not once the node stopped or went silent", async () => {
      const tenant = await ctx.tenant();
      const node = uniqueName("node");
      await ctx.store().heartbeatNode(node, 10_000);
      const session = await newSession(tenant, node);
      expect((await ctx.store().getResumableSession(tenant.id, session.id, 9_000))?.ownerAlive).toBe(true);
      expect((await ctx.store().getResumableSession(tenant.id, session.id, 11_000))?.ownerAlive).toBe(false);
      await ctx.store().stopNode(node);
      expect((await ctx.store().getResumableSession(tenant.id, session.id, 9_000))?.ownerAlive).toBe(false);
      await ctx.store().heartbeatNode(node, 12_000);
      expect((await ctx.store().getResumableSession(tenant.id, session.id, 11_000))?.ownerAlive).toBe(true);
      const other = await ctx.tenant("other");
      expect(await ctx.store().getResumableSession(other.id, session.id, 0)).toBeUndefined();
    });

    it("adoption is a compare-and-set on the owner: of concurrent adopters exactly one wins", async () => {
      const tenant = await ctx.tenant();
      const gone = uniqueName("gone");
      const session = await newSession(tenant, gone);
      const results = await Promise.all(
        Array.from({ length: 5 }, (_, i) => ctx.store().adoptSession(tenant.id, session.id, { fromNode: gone, toNode: `adopter-${i}` })),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = `adopter-${results.indexOf(true)}`;
      expect(await ctx.store().getSession(tenant.id, session.id)).toMatchObject({ nodeId: winner, status: "detached" });
      expect(await ctx.store().adoptSession(tenant.id, session.id, { fromNode: gone, toNode: "late" })).toBe(false);
      await ctx.store().updateSessionStatus(tenant.id, session.id, { status: "completed" });
      expect(await ctx.store().adoptSession(tenant.id, session.id, { fromNode: winner, toNode: "late" })).toBe(false);
    });

    it("the state snapshot is stored with a turn (unchanged by a turn without one) and by saveSessionState", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      expect((await ctx.store().getResumableSession(tenant.id, session.id, 0))?.state).toBeUndefined();
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(1), events(1, 2), '{"v":1}');
      expect((await ctx.store().getResumableSession(tenant.id, session.id, 0))?.state).toBe('{"v":1}');
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(2), events(3, 3));
      expect(await ctx.store().getResumableSession(tenant.id, session.id, 0)).toMatchObject({ state: '{"v":1}', lastEventSeq: 3 });
      expect(await ctx.store().saveSessionState(tenant.id, session.id, '{"v":2}')).toBe(true);
      expect((await ctx.store().getResumableSession(tenant.id, session.id, 0))?.state).toBe('{"v":2}');
    });

    it("a snapshot given as parts (strings and shared UTF-8 bytes) is stored as their text, with a turn and by saveSessionState", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      // Multi-byte characters in both kinds of part, a shared part over 1 MB (SQLite's thread
      // runs it uncached), and an empty one.
      const big = `"${"snapshot ✓ ünïcode 𝄞 ".repeat(60_000)}"`;
      const parts = ['{"history":[', sharedUtf8(big), ",", sharedUtf8(""), '"𝄞 ende"', "]}"];
      const text = `{"history":[${big},"𝄞 ende"]}`;
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(1), events(1, 1), new TextParts(parts));
      expect((await ctx.store().getResumableSession(tenant.id, session.id, 0))?.state).toBe(text);
      const second = ['{"v":"', sharedUtf8("zwei ✓"), '"}'];
      expect(await ctx.store().saveSessionState(tenant.id, session.id, new TextParts(second))).toBe(true);
      expect((await ctx.store().getResumableSession(tenant.id, session.id, 0))?.state).toBe('{"v":"zwei ✓"}');
    });

    it("pruning records how far it deleted, so an expired seq is known even across keepalive holes", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      const n = SUITE_RETENTION.maxEventsPerSession;
      // Seq 3 was never stored (a keepalive).
      await ctx.store().appendEvents(tenant.id, session.id, [...events(1, 2), ...events(4, n + 4)]);
      expect(await ctx.store().eventsPrunedThrough(tenant.id, session.id)).toBe(0);
      await ctx.store().pruneEvents();
      const kept = (await ctx.store().readEvents(tenant.id, session.id))!.map((e) => e.seq);
      expect(kept).toEqual(events(5, n + 4).map((e) => e.seq));
      expect(await ctx.store().eventsPrunedThrough(tenant.id, session.id)).toBe(4);
      expect(await ctx.store().getResumableSession(tenant.id, session.id, 0)).toMatchObject({ eventsPrunedThrough: 4, lastEventSeq: n + 4 });
    });

    it("sweepOrphanedSessions ends only live sessions of gone nodes that nobody touched within the grace", async () => {
      const tenant = await ctx.tenant();
      const alive = uniqueName("alive");
      const gone = uniqueName("gone");
      const now = Date.now();
      await ctx.store().heartbeatNode(alive, now);
      await ctx.store().heartbeatNode(gone, now - 60_000);
      const ofAlive = await newSession(tenant, alive);
      const ofGone = await newSession(tenant, gone);
      // The grace is "everything older than the future": both are idle long enough.
      const { ended } = await ctx.store().sweepOrphanedSessions({ aliveSince: now - 30_000, idleBefore: now + 60_000 });
      expect(ended).toBeGreaterThanOrEqual(1);
      expect((await ctx.store().getSession(tenant.id, ofAlive.id))?.status).toBe("active");
      expect(await ctx.store().getSession(tenant.id, ofGone.id)).toMatchObject({ status: "cancelled", endReason: "abandoned" });
      const fresh = await newSession(tenant, gone);
      await ctx.store().sweepOrphanedSessions({ aliveSince: now - 30_000, idleBefore: now - 60_000 });
      // Not ended within the grace, but nobody runs it.
      expect((await ctx.store().getSession(tenant.id, fresh.id))?.status).toBe("detached");
    });
  });
}
