// The team event log and its watchers over a real SQLite store and the memory bus: ordering,
// the replay/live seam, and slow watchers that fall back to the store without slowing writers.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createMemoryBus, type EventBus } from "../../src/bus/index.ts";
import { openSqliteStore, type Store } from "../../src/store/index.ts";
import { TaskLog } from "../../src/teams/task-log.ts";
import { watchTask } from "../../src/teams/watch.ts";
import type { SequencedTeamEvent } from "../../src/teams/index.ts";

const silent = { info() {}, warn() {}, error() {} };
const encode = (e: SequencedTeamEvent): Uint8Array => new TextEncoder().encode(String(e.seq));
const seqOf = (b: Uint8Array): number => Number(new TextDecoder().decode(b));

let store: Store;
let bus: EventBus;
beforeEach(async () => {
  store = await openSqliteStore(":memory:");
  bus = createMemoryBus();
});
afterEach(async () => {
  await bus.close();
  await store.close();
});

async function newLog() {
  const tenant = await store.ensureTenant(`t-${Math.random()}`);
  const task = await store.createTask(tenant.id, { environmentId: "env", prompt: "p" });
  return { tenant, task, log: new TaskLog(task, { store, bus, encode, log: silent }) };
}

const phase = (n: number) => ({ type: "worker_phase" as const, workerId: "w", phase: n, mode: "react" as const });

async function collect(events: AsyncIterable<Uint8Array>, delayEvery = 0): Promise<number[]> {
  const out: number[] = [];
  for await (const b of events) {
    out.push(seqOf(b));
    if (delayEvery > 0 && out.length % delayEvery === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return out;
}

describe("team event log and watchers", () => {
  it("numbers appends in call order, stores them before publishing, and ends with the task", async () => {
    const { tenant, task, log } = await newLog();
    const live = bus.subscribe(`roz.team.${task.id}`, { from: "new" });
    const seen: number[] = [];
    const reading = (async () => {
      for await (const m of live) {
        if (m.headers["Roz-End"] !== undefined) return;
        // Published only once stored: the store already has it.
        const stored = await store.readTeamEvents(tenant.id, task.id, { afterSeq: seqOf(m.data) - 1, limit: 1 });
        expect(stored?.[0]?.seq).toBe(seqOf(m.data));
        seen.push(seqOf(m.data));
      }
    })();
    await Promise.all(Array.from({ length: 50 }, (_, i) => log.append(phase(i))));
    await log.end("completed");
    await reading;
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(await store.getTask(tenant.id, task.id)).toMatchObject({ status: "completed", lastSeq: 50 });
  });

  it("watchers started before, during and after the writes all see 1..n once, and end", async () => {
    const { tenant, task, log } = await newLog();
    const controller = new AbortController();
    const early = collect(await watchTask({ store, bus }, tenant.id, task.id, 0, controller.signal));
    const writes = (async () => {
      for (let i = 0; i < 3000; i++) {
        void log.append(phase(i));
        if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const middle = collect(await watchTask({ store, bus }, tenant.id, task.id, 10, controller.signal));
    // A slow watcher: far behind the writers, it loses live messages and reads the store.
    const slow = collect(await watchTask({ store, bus }, tenant.id, task.id, 0, controller.signal), 20);
    await writes;
    await log.end("completed");
    const late = collect(await watchTask({ store, bus }, tenant.id, task.id, 2990, controller.signal));
    const all = Array.from({ length: 3000 }, (_, i) => i + 1);
    expect(await early).toEqual(all);
    expect(await middle).toEqual(all.slice(10));
    expect(await slow).toEqual(all);
    expect(await late).toEqual(all.slice(2990));
  });

  it("an unknown task is not_found and leaves no subscription behind", async () => {
    const { tenant } = await newLog();
    await expect(watchTask({ store, bus }, tenant.id, "00000000-0000-4000-8000-000000000000", 0, new AbortController().signal)).rejects.toMatchObject({
      reason: "not_found",
    });
  });

  it("aborting the watcher's signal ends a live watch", async () => {
    const { tenant, task, log } = await newLog();
    await log.append(phase(1));
    const controller = new AbortController();
    const reading = collect(await watchTask({ store, bus }, tenant.id, task.id, 0, controller.signal));
    await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort();
    expect(await reading).toEqual([1]);
  });
});
