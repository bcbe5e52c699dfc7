import { describe, expect, it } from "vitest";
import type { SessionStatus, Tenant } from "../../../src/store/index.ts";
import type { SuiteContext } from "../conformance.ts";
import { uniqueName } from "../fixtures.ts";

/** Sessions nobody runs: the nodes' processes, an earlier run's sessions, the sweep and end reasons. */
export function orphanedSessionSuite(ctx: SuiteContext): void {
  const newSession = (tenant: Tenant, nodeId?: string) =>
    ctx.store().createSession(tenant.id, { environmentId: "env", model: "scripted/default", ...(nodeId ? { nodeId } : {}) });
  const statusOf = async (tenant: Tenant, id: string) => (await ctx.store().getSession(tenant.id, id))?.status;

  describe("orphaned sessions", () => {
    it("runningNodesOn lists the host's nodes recorded with a process until they stop", async () => {
      const host = uniqueName("host");
      const generated = uniqueName("generated");
      const named = uniqueName("named");
      await ctx.store().heartbeatNode(generated, 5_000, { host, pid: 4242 });
      await ctx.store().heartbeatNode(named, 5_000);
      // A later beat keeps the recorded process.
      await ctx.store().heartbeatNode(generated, 6_000);
      expect(await ctx.store().runningNodesOn(host)).toEqual([{ id: generated, host, pid: 4242, heartbeatAt: 6_000 }]);
      await ctx.store().stopNode(generated, 6_000);
      expect(await ctx.store().runningNodesOn(host)).toEqual([]);
    });

    it("releaseNodeSessions hands an earlier run's live sessions to nobody, detached as of its last heartbeat", async () => {
      const tenant = await ctx.tenant();
      const node = uniqueName("node");
      const other = uniqueName("other");
      const now = Date.now();
      const live = await newSession(tenant, node);
      const ended = await newSession(tenant, node);
      await ctx.store().updateSessionStatus(tenant.id, ended.id, { status: "completed" });
      const elsewhere = await newSession(tenant, other);
      await ctx.store().heartbeatNode(node, now + 10_000);
      expect(await ctx.store().releaseNodeSessions(node)).toBe(1);
      const released = await ctx.store().getSession(tenant.id, live.id);
      expect(released).toMatchObject({ status: "detached", updatedAt: now + 10_000 });
      expect(released?.nodeId).toBeUndefined();
      expect(await ctx.store().getSession(tenant.id, ended.id)).toMatchObject({ status: "completed", nodeId: node });
      expect(await ctx.store().getSession(tenant.id, elsewhere.id)).toMatchObject({ status: "active", nodeId: other });
    });

    it("the sweep counts the grace from when the node was last seen, and ends each session once when nodes sweep together", async () => {
      const tenant = await ctx.tenant();
      // The sweep runs 100 s from now with a 60 s grace and a 30 s node expiry.
      const now = Date.now();
      const at = now + 100_000;
      const limits = { aliveSince: at - 30_000, idleBefore: at - 60_000 };
      // Whatever earlier tests left that these limits end is ended first, so the counts below are this test's.
      await ctx.store().sweepOrphanedSessions(limits, at);
      const node = async (label: string, heartbeatAt: number, stoppedAt?: number) => {
        const id = uniqueName(label);
        await ctx.store().heartbeatNode(id, heartbeatAt);
        if (stoppedAt !== undefined) await ctx.store().stopNode(id, stoppedAt);
        return id;
      };
      const alive = await newSession(tenant, await node("alive", at));
      const justStopped = await newSession(tenant, await node("just-stopped", now, at - 1_000));
      // Silent past its expiry, but seen within the grace.
      const silent = await newSession(tenant, await node("silent", at - 50_000));
      const longGone = await node("long-stopped", now, now);
      const abandoned = [await newSession(tenant, "never-heart-beat"), await newSession(tenant)];
      for (let i = 0; i < 4; i++) abandoned.push(await newSession(tenant, longGone));

      const sweeps = await Promise.all([0, 1, 2].map(() => ctx.store().sweepOrphanedSessions(limits, at)));
      expect(sweeps.reduce((sum, s) => sum + s.ended, 0)).toBe(abandoned.length);
      expect(await statusOf(tenant, alive.id)).toBe("active");
      expect(await statusOf(tenant, justStopped.id)).toBe("detached");
      expect(await statusOf(tenant, silent.id)).toBe("detached");
      for (const s of abandoned) {
        expect(await ctx.store().getSession(tenant.id, s.id)).toMatchObject({ status: "cancelled", endReason: "abandoned", endedAt: at });
      }
      // The transcript of an abandoned session stays.
      expect(await ctx.store().listTurns(tenant.id, abandoned[0]!.id)).toEqual([]);
    });

    it("an ended session says why; the first reason stored stays, and a live one has none", async () => {
      const tenant = await ctx.tenant();
      const reasonAfter = async (status: SessionStatus, endReason?: "abandoned") => {
        const s = await newSession(tenant);
        expect((await ctx.store().getSession(tenant.id, s.id))?.endReason).toBeUndefined();
        return (await ctx.store().updateSessionStatus(tenant.id, s.id, { status, ...(endReason ? { endReason } : {}) }))?.endReason;
      };
      expect(await reasonAfter("completed")).toBe("completed");
      expect(await reasonAfter("cancelled")).toBe("client");
      expect(await reasonAfter("error")).toBe("error");
      expect(await reasonAfter("cancelled", "abandoned")).toBe("abandoned");
      expect(await reasonAfter("detached")).toBeUndefined();
      const s = await newSession(tenant);
      await ctx.store().updateSessionStatus(tenant.id, s.id, { status: "cancelled", endReason: "abandoned" });
      const again = await ctx.store().updateSessionStatus(tenant.id, s.id, { status: "cancelled", from: ["active", "detached"] });
      expect(again).toBeUndefined();
      expect((await ctx.store().getSession(tenant.id, s.id))?.endReason).toBe("abandoned");
    });
  });
}
