// A provider reader lets the event loop run while it handles chunks that were already
// buffered, and only then: a paced stream, whose reads wait for the network, never pays for
// an extra event-loop turn per chunk.
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { drain, Fairness } from "../../src/models/push.ts";

function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {}
}

describe("Fairness", () => {
  it("yields once chunks that were already there have been handled for more than 2 ms", async () => {
    const fairness = new Fairness();
    let yielded = 0;
    for (let i = 0; i < 10; i++) {
      fairness.reading();
      await Promise.resolve(); // a buffered chunk: a microtask, no wait
      fairness.received();
      busy(0.5);
      const turn = fairness.handled();
      if (turn) {
        yielded++;
        await turn;
      }
    }
    // 5 ms of handling without a wait: at least one turn, not one per chunk.
    expect(yielded).toBeGreaterThanOrEqual(1);
    expect(yielded).toBeLessThan(10);
  });

  it("does not yield after a read that waited for its chunk", async () => {
    const fairness = new Fairness();
    busy(3); // handling before the wait does not count after it
    for (let i = 0; i < 5; i++) {
      fairness.reading();
      await sleep(5); // the network: the loop ran meanwhile
      fairness.received();
      expect(fairness.handled()).toBeUndefined();
    }
  });

  it("does not take a read that waited behind other microtasks for a turn of the event loop", async () => {
    const fairness = new Fairness();
    let turn: Promise<void> | undefined;
    for (let i = 0; i < 5 && !turn; i++) {
      fairness.reading();
      // Other sessions' work, all microtasks: slow, but nothing else could run meanwhile.
      await Promise.resolve().then(() => busy(1));
      fairness.received();
      turn = fairness.handled();
    }
    expect(turn).toBeInstanceOf(Promise);
    await turn;
  });

  it("still yields when handling one chunk after a wait takes too long", async () => {
    const fairness = new Fairness();
    fairness.reading();
    await sleep(5);
    fairness.received();
    busy(3);
    const turn = fairness.handled();
    expect(turn).toBeInstanceOf(Promise);
    await turn;
  });
});

describe("drain", () => {
  it("lets an immediate run while it pushes 20,000 buffered events, and pushes them all in order", async () => {
    async function* flood() {
      for (let i = 0; i < 20_000; i++) yield i;
    }
    const seen: number[] = [];
    let ranAt = -1;
    setImmediate(() => (ranAt = seen.length));
    await drain(flood(), (n) => {
      seen.push(n);
      busy(0.002);
    });
    expect(seen).toEqual(Array.from({ length: 20_000 }, (_, i) => i));
    expect(ranAt).toBeGreaterThan(0);
    expect(ranAt).toBeLessThan(20_000);
  });

  it("closes the source when the stop signal aborts", async () => {
    let closed = false;
    async function* source() {
      try {
        for (let i = 0; ; i++) yield i;
      } finally {
        closed = true;
      }
    }
    const stop = new AbortController();
    const seen: number[] = [];
    await drain(
      source(),
      (n) => {
        seen.push(n);
        if (n === 3) stop.abort();
      },
      stop.signal,
    );
    expect(seen).toEqual([0, 1, 2, 3]);
    expect(closed).toBe(true);
  });
  it("a sink that throws closes the source and passes the error on; a source that fails is not closed", async () => {
    let closed = 0;
    async function* source(failAt?: number) {
      try {
        for (let i = 0; ; i++) {
          if (i === failAt) throw new Error("source failed");
          yield i;
        }
      } finally {
        closed++;
      }
    }
    await expect(
      drain(source(), (n) => {
        if (n === 2) throw new Error("sink failed");
      }),
    ).rejects.toThrow("sink failed");
    expect(closed).toBe(1);
    const seen: number[] = [];
    await expect(drain(source(3), (n) => seen.push(n))).rejects.toThrow("source failed");
    expect(seen).toEqual([0, 1, 2]);
    expect(closed).toBe(2); // its own finally ran as it failed, nothing more
  });
});
