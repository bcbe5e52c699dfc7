import { describe, expect, it } from "vitest";
import { createMemoryBus } from "../../src/bus/index.ts";
import { defineBusConformance } from "./conformance.ts";

defineBusConformance("memory", async () => createMemoryBus());

describe("memory bus specifics", () => {
  it("a slow subscriber loses its oldest messages beyond maxPending, and counts them", async () => {
    const bus = createMemoryBus();
    const sub = bus.subscribe("slow.s", { from: "new", maxPending: 3 });
    for (let i = 0; i < 10; i++) await bus.publish("slow.s", new Uint8Array([i]));
    const got: number[] = [];
    for await (const m of sub) {
      got.push(m.data[0]!);
      if (got.length === 3) break;
    }
    expect(got).toEqual([7, 8, 9]);
    expect(sub.dropped).toBe(7);
    expect(sub.received).toBe(10);
    await bus.close();
  });
});
