// While HTTP/2 streams arrive in a flood, the server collects V8's young generation in small
// steps (so that no collection copies a whole burst's objects while every client waits);
// otherwise it leaves V8 alone. The collector's own rules run against a real clock; the
// server's against real floods over real sockets.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StreamFloodCollector } from "../../src/app/stream-flood-gc.ts";
import { MajorMarkingWatch } from "../../src/app/v8-gc.ts";
import { garbageCollector } from "../../src/domain/index.ts";
import { rapidResetAttack } from "../support/attacks.ts";
import { STALL_BOUND_MS, startBystander } from "../support/bystander.ts";
import { metric, startServer, type TestServer } from "../support/server.ts";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A collector's timings scaled down for a test: floods end 100 ms after their last stream. */
const QUICK = { intervalMs: 5, windowMs: 1000, quietMs: 100, youngBytes: 0 };

describe("StreamFloodCollector", () => {
  it("collects only from the stream that makes a flood, and stops once the flood is over", async () => {
    let collections = 0;
    const logged: string[] = [];
    const collector = new StreamFloodCollector({
      ...QUICK,
      streamsPerWindow: 100,
      collect: () => collections++,
      log: { warn: (_obj, msg) => logged.push(msg), info: (_obj, msg) => logged.push(msg) },
    });
    for (let i = 0; i < 99; i++) collector.noteStream();
    await pause(50);
    expect(collector.active).toBe(false);
    expect(collections).toBe(0);
    collector.noteStream();
    expect(collector.active).toBe(true);
    await pause(60);
    expect(collections).toBeGreaterThan(0);
    await expect.poll(() => collector.active, { timeout: 2000 }).toBe(false);
    const after = collections;
    await pause(50);
    expect(collections).toBe(after);
    expect(logged).toEqual(["HTTP/2 stream flood: collecting the young generation often while it lasts", "HTTP/2 stream flood over"]);
    collector.stop();
  });

  it("makes no collection while a mark-compact's marking is under way (watched from the first stream on), and sizes the heap only while the flood lasts", async () => {
    let collections = 0;
    const marking = { marking: true, started: 0, stopped: 0, start: () => marking.started++, stop: () => marking.stopped++ };
    const sizing: string[] = [];
    const collector = new StreamFloodCollector({
      ...QUICK,
      streamsPerWindow: 10,
      collect: () => collections++,
      majorMarking: marking,
      heapSizing: { enter: () => sizing.push("enter"), leave: () => sizing.push("leave") },
    });
    expect(marking.started).toBe(0);
    for (let i = 0; i < 10; i++) collector.noteStream();
    expect(marking.started).toBe(1);
    expect(sizing).toEqual(["enter"]);
    await pause(50);
    expect(collections).toBe(0);
    marking.marking = false;
    await expect.poll(() => collections, { timeout: 1000 }).toBeGreaterThan(0);
    await expect.poll(() => collector.active, { timeout: 2000 }).toBe(false);
    expect(sizing).toEqual(["enter", "leave"]);
    expect(marking.stopped).toBe(0);
    collector.stop();
    expect(sizing).toEqual(["enter", "leave"]);
    expect(marking.stopped).toBe(1);
    // Stopped for good (the server is closing): streams still arriving make no flood.
    for (let i = 0; i < 100; i++) collector.noteStream();
    expect(collector.active).toBe(false);
    expect(sizing).toEqual(["enter", "leave"]);
  });

  it("does nothing when turned off", async () => {
    let collections = 0;
    const collector = new StreamFloodCollector({ intervalMs: 0, youngBytes: 0, collect: () => collections++ });
    for (let i = 0; i < 1000; i++) collector.noteStream();
    await pause(30);
    expect(collector.active).toBe(false);
    expect(collections).toBe(0);
  });
});

describe("MajorMarkingWatch", () => {
  it("sees V8 start incremental marking as the old generation fills, and a mark-compact end it", async () => {
    const watch = new MajorMarkingWatch();
    watch.start();
    try {
      const kept: object[][] = [];
      let sawMarking = false;
      // V8 starts marking well within 300 rounds (some 2 MB kept each); beyond, fail cleanly.
      for (let round = 0; round < 300 && !sawMarking; round++) {
        kept.push(Array.from({ length: 20_000 }, (_, i) => ({ i, text: `item ${i}` })));
        await new Promise((resolve) => setImmediate(resolve));
        sawMarking = watch.marking;
      }
      expect(sawMarking).toBe(true);
      garbageCollector()?.({ type: "major", flavor: "last-resort" });
      await expect.poll(() => watch.marking, { timeout: 2000 }).toBe(false);
      expect(kept.length).toBeGreaterThan(0);
    } finally {
      watch.stop();
    }
  });
});

const floodCollections = (url: string) => metric(url, /^roz_flood_gc_total (\d+)$/m);

for (const [what, env, expectCollections] of [
  ["on by default", {}, true],
  ["off with ROZ_FLOOD_GC_INTERVAL_MS=0", { ROZ_FLOOD_GC_INTERVAL_MS: "0" }, false],
] as const) {
  describe(`young-generation collections under a stream flood, ${what}`, () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer(env);
    });
    afterAll(() => server?.close());

    it(expectCollections ? "a rapid-reset flood turns them on; a bystander keeps streaming" : "a rapid-reset flood makes none", async () => {
      expect(await floodCollections(server.url)).toBe(0);
      const bystander = await startBystander(server.url);
      await rapidResetAttack(10_000)(server.url);
      const report = await bystander.stop();
      expect(report.p99Ms, JSON.stringify(report)).toBeLessThan(STALL_BOUND_MS);
      if (expectCollections) await expect.poll(() => floodCollections(server.url), { timeout: 3000 }).toBeGreaterThan(0);
      else {
        await pause(200);
        expect(await floodCollections(server.url)).toBe(0);
      }
    }, 60_000);
  });
}
