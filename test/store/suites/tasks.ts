import { describe, expect, it } from "vitest";
import type { RozError } from "../../../src/errors/index.ts";
import type { Tenant } from "../../../src/store/index.ts";
import { newestFirst, type SuiteContext } from "../conformance.ts";

const payload = (n: number) => new TextEncoder().encode(`team event ${n}`);
const events = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => ({ seq: from + i, payload: payload(from + i), createdAt: 1_000 + from + i }));
const usage = (n: number) => ({ inputTokens: 10 * n, outputTokens: n, cacheReadTokens: 2 * n, cacheCreationTokens: 0 });

export function taskSuite(ctx: SuiteContext): void {
  const newTask = (tenant: Tenant, extra: { nodeId?: string } = {}) =>
    ctx.store().createTask(tenant.id, { environmentId: "env", prompt: "do things", model: "scripted/default", ...extra });
  const worker = (n: number) => ({ prompt: `worker ${n}`, mode: "react", model: "scripted/default", depth: 1 });

  describe("tasks, workers and team events", () => {
    it("creates, gets and lists tasks newest first with a status filter", async () => {
      const tenant = await ctx.tenant();
      const a = await newTask(tenant);
      const b = await newTask(tenant);
      expect(a).toMatchObject({ tenantId: tenant.id, environmentId: "env", prompt: "do things", status: "running", lastSeq: 0 });
      expect(a.usage).toEqual(usage(0));
      expect(await ctx.store().getTask(tenant.id, a.id)).toEqual(a);
      await ctx.store().endTask(tenant.id, a.id, "completed");
      // Both may be made in the same millisecond: the id then decides, as for every list.
      const [newer, older] = [a, b].sort(newestFirst);
      const all = await ctx.store().listTasks(tenant.id, { limit: 1 });
      expect(all.items.map((t) => t.id)).toEqual([newer!.id]);
      const next = await ctx.store().listTasks(tenant.id, { limit: 1, cursor: all.nextCursor! });
      expect(next.items.map((t) => t.id)).toEqual([older!.id]);
      expect((await ctx.store().listTasks(tenant.id, { status: "completed" })).items.map((t) => t.id)).toEqual([a.id]);
      expect((await ctx.store().listTasks(tenant.id, { status: "running" })).items.map((t) => t.id)).toEqual([b.id]);
    });

    it("numbers workers in spawn order and ends each once, summing usage into the task", async () => {
      const tenant = await ctx.tenant();
      const task = await newTask(tenant);
      const w1 = await ctx.store().addWorker(tenant.id, task.id, worker(1));
      const w2 = await ctx.store().addWorker(tenant.id, task.id, worker(2));
      expect([w1?.index, w2?.index]).toEqual([1, 2]);
      expect(
        await ctx.store().endWorker(tenant.id, task.id, w1!.id, { status: "completed", result: "done", usage: usage(1), transcript: [{ role: "user" }] }),
      ).toBe(true);
      expect(await ctx.store().endWorker(tenant.id, task.id, w1!.id, { status: "failed", failure: "timeout", usage: usage(5) })).toBe(false);
      expect(await ctx.store().endWorker(tenant.id, task.id, w2!.id, { status: "failed", failure: "model_error", usage: usage(2) })).toBe(true);
      const workers = await ctx.store().listWorkers(tenant.id, task.id);
      expect(workers?.map((w) => [w.index, w.status, w.result, w.failure])).toEqual([
        [1, "completed", "done", undefined],
        [2, "failed", undefined, "model_error"],
      ]);
      expect(workers?.[0]?.transcript).toEqual([{ role: "user" }]);
      expect(workers?.[0]?.endedAt).toEqual(expect.any(Number));
      expect((await ctx.store().getTask(tenant.id, task.id))?.usage).toEqual(usage(3));
    });

    it("appends team events in order, records the last seq, refuses a repeated seq whole", async () => {
      const tenant = await ctx.tenant();
      const task = await newTask(tenant);
      expect(await ctx.store().appendTeamEvents(tenant.id, task.id, events(1, 3))).toBe(true);
      expect(await ctx.store().appendTeamEvents(tenant.id, task.id, events(4, 1500))).toBe(true);
      const err = await ctx
        .store()
        .appendTeamEvents(tenant.id, task.id, events(1501, 1502).concat(events(3, 3)))
        .catch((e: unknown) => e);
      expect((err as RozError).reason).toBe("conflict");
      expect((await ctx.store().getTask(tenant.id, task.id))?.lastSeq).toBe(1500);
      const first = await ctx.store().readTeamEvents(tenant.id, task.id, { limit: 2 });
      expect(first?.map((e) => e.seq)).toEqual([1, 2]);
      expect(first?.[1]?.payload).toEqual(payload(2));
      expect(first?.[1]?.createdAt).toBe(1_002);
      expect((await ctx.store().readTeamEvents(tenant.id, task.id, { afterSeq: 1498 }))?.map((e) => e.seq)).toEqual([1499, 1500]);
      expect(await ctx.store().readTeamEvents(tenant.id, task.id, { afterSeq: 0, limit: 5000 })).toHaveLength(1500);
    });

    it("ends a task once; runningTasks lists the running ones of a node", async () => {
      const tenant = await ctx.tenant();
      const mine = await newTask(tenant, { nodeId: `node-${tenant.id}` });
      const other = await newTask(tenant, { nodeId: `other-${tenant.id}` });
      const running = (await ctx.store().runningTasks(`node-${tenant.id}`)).map((t) => t.id);
      expect(running).toEqual([mine.id]);
      expect((await ctx.store().runningTasks()).map((t) => t.id)).toEqual(expect.arrayContaining([mine.id, other.id]));
      const ended = await ctx.store().endTask(tenant.id, mine.id, "cancelled");
      expect(ended?.status).toBe("cancelled");
      expect(ended?.endedAt).toEqual(expect.any(Number));
      expect(await ctx.store().endTask(tenant.id, mine.id, "completed")).toBeUndefined();
      expect(await ctx.store().runningTasks(`node-${tenant.id}`)).toEqual([]);
    });

    it("orphanedTasks lists running tasks of silent or stopped nodes; claimTask lets exactly one node take each", async () => {
      const tenant = await ctx.tenant();
      const [alive, silent, stopped] = [`alive-${tenant.id}`, `silent-${tenant.id}`, `stopped-${tenant.id}`];
      await ctx.store().heartbeatNode(alive, 10_000);
      await ctx.store().heartbeatNode(silent, 1_000);
      await ctx.store().heartbeatNode(stopped, 10_000);
      await ctx.store().stopNode(stopped, 10_000);
      const onAlive = await newTask(tenant, { nodeId: alive });
      const onSilent = await newTask(tenant, { nodeId: silent });
      const onStopped = await newTask(tenant, { nodeId: stopped });
      const ownerless = await newTask(tenant);
      const orphaned = (await ctx.store().orphanedTasks(5_000)).map((t) => t.id);
      expect(orphaned).toEqual(expect.arrayContaining([onSilent.id, onStopped.id, ownerless.id]));
      expect(orphaned).not.toContain(onAlive.id);
      const claims = await Promise.all(
        ["n1", "n2", "n3"].map((n) => ctx.store().claimTask(tenant.id, onSilent.id, { fromNode: silent, toNode: `${n}-${tenant.id}` })),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await ctx.store().claimTask(tenant.id, ownerless.id, { fromNode: undefined, toNode: alive })).toBe(true);
      expect((await ctx.store().orphanedTasks(5_000)).map((t) => t.id)).not.toContain(ownerless.id);
      await ctx.store().endTask(tenant.id, onStopped.id, "completed");
      expect(await ctx.store().claimTask(tenant.id, onStopped.id, { fromNode: stopped, toNode: alive })).toBe(false);
    });

    it("another tenant's task behaves as unknown everywhere", async () => {
      const [tenant, other] = [await ctx.tenant(), await ctx.tenant()];
      const task = await newTask(tenant);
      const w = await ctx.store().addWorker(tenant.id, task.id, worker(1));
      await ctx.store().appendTeamEvents(tenant.id, task.id, events(1, 2));
      expect(await ctx.store().getTask(other.id, task.id)).toBeUndefined();
      expect((await ctx.store().listTasks(other.id)).items).toEqual([]);
      expect(await ctx.store().addWorker(other.id, task.id, worker(2))).toBeUndefined();
      expect(await ctx.store().listWorkers(other.id, task.id)).toBeUndefined();
      expect(await ctx.store().endWorker(other.id, task.id, w!.id, { status: "completed", usage: usage(1) })).toBe(false);
      expect(await ctx.store().appendTeamEvents(other.id, task.id, events(3, 3))).toBe(false);
      expect(await ctx.store().readTeamEvents(other.id, task.id)).toBeUndefined();
      expect(await ctx.store().endTask(other.id, task.id, "completed")).toBeUndefined();
      expect((await ctx.store().getTask(tenant.id, task.id))?.status).toBe("running");
    });
  });
}
