import { describe, expect, it } from "vitest";
import { AsyncQueue } from "../../src/domain/index.ts";

async function drain<T>(queue: AsyncQueue<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of queue) out.push(item);
  return out;
}

describe("AsyncQueue", () => {
  it("hands items over in order, those queued before the consumer and those pushed while it waits", async () => {
    const queue = new AsyncQueue<number>();
    queue.push(1);
    queue.push(2);
    const drained = drain(queue);
    await new Promise((resolve) => setImmediate(resolve));
    queue.push(3);
    await new Promise((resolve) => setImmediate(resolve));
    queue.push(4);
    queue.end();
    queue.push(5); // after the end: dropped, no throw
    expect(await drained).toEqual([1, 2, 3, 4]);
  });

  it("throws a failure after the queued items", async () => {
    const queue = new AsyncQueue<string>();
    const seen: string[] = [];
    queue.push("a");
    queue.fail(new Error("broken"));
    await expect(
      (async () => {
        for await (const item of queue) seen.push(item);
      })(),
    ).rejects.toThrow("broken");
    expect(seen).toEqual(["a"]);
  });

  it("wakes a waiting consumer with the end", async () => {
    const queue = new AsyncQueue<number>();
    const next = queue[Symbol.asyncIterator]().next();
    queue.end();
    expect(await next).toEqual({ value: undefined, done: true });
  });

  it("ends an iterator its consumer returned, also one waiting for an item", async () => {
    const queue = new AsyncQueue<number>();
    const iterator = queue[Symbol.asyncIterator]();
    const waiting = iterator.next();
    expect(await iterator.return?.()).toEqual({ value: undefined, done: true });
    queue.push(1);
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
    // The item is still the queue's: a new consumer gets it.
    queue.end();
    expect(await drain(queue)).toEqual([1]);
  });

  it("handles a burst of 100,000 items", async () => {
    const queue = new AsyncQueue<number>();
    for (let i = 0; i < 100_000; i++) queue.push(i);
    queue.end();
    const out = await drain(queue);
    expect(out.length).toBe(100_000);
    expect(out[99_999]).toBe(99_999);
  });

  it("drops the oldest unread items beyond maxPending and counts them", async () => {
    const queue = new AsyncQueue<number>({ maxPending: 2 });
    for (let i = 1; i <= 5; i++) queue.push(i);
    queue.end();
    expect(await drain(queue)).toEqual([4, 5]);
    expect(queue.dropped).toBe(3);
    expect(queue.received).toBe(5);
  });

  it("stops at once on close, dropping what is unread, and runs onClose once", async () => {
    let closes = 0;
    const queue = new AsyncQueue<number>({ onClose: () => closes++ });
    queue.push(1);
    queue.close();
    queue.close();
    queue.push(2);
    expect(await drain(queue)).toEqual([]);
    expect(closes).toBe(1);
  });

  it("closes when its reader leaves early with closeOnReturn, not when it read to the end", async () => {
    let closes = 0;
    const early = new AsyncQueue<number>({ closeOnReturn: true, onClose: () => closes++ });
    early.push(1);
    early.push(2);
    for await (const _ of early) break;
    expect(early.closed).toBe(true);
    expect(closes).toBe(1);
    const read = new AsyncQueue<number>({ closeOnReturn: true, onClose: () => closes++ });
    read.push(1);
    read.end();
    for await (const _ of read) break;
    expect(read.closed).toBe(false);
    expect(closes).toBe(1);
  });
});
