import { describe, expect, it } from "vitest";
import { RozError } from "../../../src/errors/index.ts";
import type { NewSession, Session, SessionFilter, Tenant } from "../../../src/store/index.ts";
import { newestFirst, type SuiteContext } from "../conformance.ts";

export function sessionSuite(ctx: SuiteContext): void {
  const start = (tenant: Tenant, extra: Partial<NewSession> = {}) =>
    ctx.store().createSession(tenant.id, { environmentId: "env-1", model: "scripted/default", ...extra });

  describe("sessions", () => {
    it("createSession starts active with zero totals; getSession returns it", async () => {
      const tenant = await ctx.tenant();
      const session = await start(tenant, { nodeId: "node-a", hostId: "robot-7" });
      expect(session).toMatchObject({
        tenantId: tenant.id,
        environmentId: "env-1",
        model: "scripted/default",
        status: "active",
        nodeId: "node-a",
        hostId: "robot-7",
        endedAt: undefined,
        usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 },
        turnCount: 0,
        compactionCount: 0,
      });
      expect(session.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await ctx.store().getSession(tenant.id, session.id)).toEqual(session);
    });

    it("a caller-chosen id is kept; a duplicate is a conflict", async () => {
      const tenant = await ctx.tenant();
      const id = crypto.randomUUID();
      expect((await start(tenant, { id })).id).toBe(id);
      const err = await start(tenant, { id }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RozError);
      expect((err as RozError).reason).toBe("conflict");
    });

    it("another tenant's session behaves as unknown", async () => {
      const [tenant, other] = [await ctx.tenant(), await ctx.tenant()];
      const session = await start(tenant);
      expect(await ctx.store().getSession(other.id, session.id)).toBeUndefined();
      expect(await ctx.store().updateSessionStatus(other.id, session.id, { status: "cancelled" })).toBeUndefined();
      expect((await ctx.store().listSessions(other.id)).items).toEqual([]);
      expect((await ctx.store().getSession(tenant.id, session.id))?.status).toBe("active");
    });

    it("lists newest first in stable pages; items created meanwhile do not shift later pages", async () => {
      const tenant = await ctx.tenant();
      const created: Session[] = [];
      for (let i = 0; i < 7; i++) created.push(await start(tenant));
      const expected = [...created].sort(newestFirst);

      const first = await ctx.store().listSessions(tenant.id, { limit: 3 });
      expect(first.items).toEqual(expected.slice(0, 3));
      expect(first.nextCursor).toEqual(expect.any(String));
      await start(tenant); // newer than everything: must not appear in later pages
      const second = await ctx.store().listSessions(tenant.id, { limit: 3, cursor: first.nextCursor });
      expect(second.items).toEqual(expected.slice(3, 6));
      const third = await ctx.store().listSessions(tenant.id, { limit: 3, cursor: second.nextCursor });
      expect(third.items).toEqual(expected.slice(6));
      expect(third.nextCursor).toBeUndefined();
      // An exact fit has no next page either.
      const all = await ctx.store().listSessions(tenant.id, { limit: 8 });
      expect(all.items).toHaveLength(8);
      expect(all.nextCursor).toBeUndefined();
      expect((await ctx.store().listSessions(tenant.id, { cursor: "" })).items).toHaveLength(8);
    });

    it("a cursor that was not made by the store is invalid_argument", async () => {
      const tenant = await ctx.tenant();
      const bad = [
        "not a cursor!",
        Buffer.from('{"a":1}').toString("base64url"),
        Buffer.from("[1]").toString("base64url"),
        Buffer.from('["x","y"]').toString("base64url"),
        Buffer.from([0xff, 0xfe]).toString("base64url"),
      ];
      for (const cursor of bad) {
        const err = await ctx
          .store()
          .listSessions(tenant.id, { cursor })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(RozError);
        expect(err).toMatchObject({ reason: "invalid_argument", code: "invalid_argument", message: "invalid cursor" });
      }
      await expect(ctx.store().listSessions(tenant.id, { limit: 0 })).rejects.toMatchObject({ reason: "invalid_argument" });
    });

    it("filters by status and environment", async () => {
      const tenant = await ctx.tenant();
      const a = await start(tenant, { environmentId: "env-a" });
      const b = await start(tenant, { environmentId: "env-b" });
      const c = await start(tenant, { environmentId: "env-a" });
      await ctx.store().updateSessionStatus(tenant.id, c.id, { status: "completed" });
      const ids = async (filter: SessionFilter) => (await ctx.store().listSessions(tenant.id, filter)).items.map((s) => s.id).sort();
      expect(await ids({ environmentId: "env-a" })).toEqual([a.id, c.id].sort());
      expect(await ids({ status: "active" })).toEqual([a.id, b.id].sort());
      expect(await ids({ status: "completed", environmentId: "env-a" })).toEqual([c.id]);
      expect(await ids({ status: "error" })).toEqual([]);
    });

    it("status changes set and clear endedAt, and honour compare-and-set", async () => {
      const tenant = await ctx.tenant();
      const s = await start(tenant, { nodeId: "node-a" });
      const detached = await ctx.store().updateSessionStatus(tenant.id, s.id, { status: "detached" });
      expect(detached).toMatchObject({ status: "detached", endedAt: undefined, nodeId: "node-a" });
      // Only a detached session may be claimed, and only once.
      const claimed = await ctx.store().updateSessionStatus(tenant.id, s.id, { status: "active", from: ["detached"], nodeId: "node-b" });
      expect(claimed).toMatchObject({ status: "active", nodeId: "node-b" });
      expect(await ctx.store().updateSessionStatus(tenant.id, s.id, { status: "active", from: ["detached"] })).toBeUndefined();
      const done = await ctx.store().updateSessionStatus(tenant.id, s.id, { status: "completed" });
      expect(done?.endedAt).toEqual(expect.any(Number));
      const again = await ctx.store().updateSessionStatus(tenant.id, s.id, { status: "error" });
      expect(again).toMatchObject({ status: "error", endedAt: done!.endedAt });
      const explicit = await ctx.store().updateSessionStatus(tenant.id, s.id, { status: "cancelled", endedAt: 42 });
      expect(explicit?.endedAt).toBe(42);
    });
  });
}
