import { describe, expect, it } from "vitest";
import { RozError } from "../../../src/errors/index.ts";
import type { NewSessionEvent, Tenant } from "../../../src/store/index.ts";
import { SUITE_RETENTION, type SuiteContext } from "../conformance.ts";

const events = (from: number, to: number): NewSessionEvent[] =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ seq: from + i, payload: new TextEncoder().encode(`event ${from + i}`) }));

export function eventSuite(ctx: SuiteContext): void {
  const newSession = (tenant: Tenant) => ctx.store().createSession(tenant.id, { environmentId: "env", model: "scripted/default" });

  describe("session events", () => {
    it("appends batches and reads them back in order after a seq", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      expect(await ctx.store().lastEventSeq(tenant.id, session.id)).toBe(0);
      expect(await ctx.store().appendEvents(tenant.id, session.id, events(1, 3))).toBe(true);
      expect(await ctx.store().appendEvents(tenant.id, session.id, events(4, 4))).toBe(true);
      expect(await ctx.store().appendEvents(tenant.id, session.id, [])).toBe(true);
      const all = await ctx.store().readEvents(tenant.id, session.id);
      expect(all?.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
      expect(all?.[2]?.payload).toEqual(new TextEncoder().encode("event 3"));
      expect(all?.[2]?.payload).toBeInstanceOf(Uint8Array);
      expect(all?.[0]?.createdAt).toEqual(expect.any(Number));
      expect((await ctx.store().readEvents(tenant.id, session.id, { afterSeq: 1, limit: 2 }))?.map((e) => e.seq)).toEqual([2, 3]);
      expect(await ctx.store().lastEventSeq(tenant.id, session.id)).toBe(4);
    });

    it("a batch with a repeated seq is a conflict and stores nothing", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      await ctx.store().appendEvents(tenant.id, session.id, events(1, 2));
      const err = await ctx
        .store()
        .appendEvents(tenant.id, session.id, events(3, 5).concat(events(2, 2)))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RozError);
      expect((err as RozError).reason).toBe("conflict");
      expect((await ctx.store().readEvents(tenant.id, session.id))?.map((e) => e.seq)).toEqual([1, 2]);
    });

    it("large batches are stored whole", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      await ctx.store().appendEvents(tenant.id, session.id, events(1, 1500));
      expect(await ctx.store().lastEventSeq(tenant.id, session.id)).toBe(1500);
      expect(await ctx.store().readEvents(tenant.id, session.id, { afterSeq: 0, limit: 5000 })).toHaveLength(1500);
    });

    it("another tenant's session behaves as unknown", async () => {
      const [tenant, other] = [await ctx.tenant(), await ctx.tenant()];
      const session = await newSession(tenant);
      await ctx.store().appendEvents(tenant.id, session.id, events(1, 2));
      expect(await ctx.store().appendEvents(other.id, session.id, events(3, 3))).toBe(false);
      expect(await ctx.store().readEvents(other.id, session.id)).toBeUndefined();
      expect(await ctx.store().lastEventSeq(other.id, session.id)).toBeUndefined();
      expect(await ctx.store().lastEventSeq(tenant.id, session.id)).toBe(2);
    });

    it("pruneEvents keeps the newest N per session and drops ended sessions' logs after the grace", async () => {
      const tenant = await ctx.tenant();
      const live = await newSession(tenant);
      const ended = await newSession(tenant);
      const recent = await newSession(tenant);
      for (const s of [live, ended, recent]) await ctx.store().appendEvents(tenant.id, s.id, events(1, 8));
      const now = Date.now();
      await ctx.store().updateSessionStatus(tenant.id, ended.id, { status: "completed", endedAt: now - SUITE_RETENTION.keepAfterEndMs - 1 });
      await ctx.store().updateSessionStatus(tenant.id, recent.id, { status: "completed", endedAt: now - 1_000 });

      expect(await ctx.store().pruneEvents(now)).toBeGreaterThanOrEqual(8 + 3 + 3);
      const keep = SUITE_RETENTION.maxEventsPerSession;
      const seqs = async (id: string) => (await ctx.store().readEvents(tenant.id, id))?.map((e) => e.seq);
      expect(await seqs(live.id)).toEqual([4, 5, 6, 7, 8].slice(-keep));
      expect(await seqs(recent.id)).toEqual([4, 5, 6, 7, 8].slice(-keep));
      expect(await seqs(ended.id)).toEqual([]);
      expect(await ctx.store().lastEventSeq(tenant.id, live.id)).toBe(8);
      // Pruning again changes nothing for these sessions.
      await ctx.store().pruneEvents(now);
      expect(await seqs(live.id)).toHaveLength(keep);
    });
  });
}
