import { describe, expect, it } from "vitest";
import { byOwner } from "../../src/cluster/relay-keep.ts";

describe("relay keep rounds", () => {
  it("groups relays by owner, in order, each once", () => {
    const relays = [
      { id: "1", owner: "a" },
      { id: "2", owner: "b" },
      { id: "3", owner: "a" },
    ];
    expect([...byOwner(relays)].map(([owner, group]) => [owner, group.map((r) => r.id)])).toEqual([
      ["a", ["1", "3"]],
      ["b", ["2"]],
    ]);
  });

  it("stays linear in relays: one round over many relays of one owner is quick", () => {
    // Copying the owner's list once per relay would copy n²/2 entries here (two hundred million), for seconds.
    const relays = Array.from({ length: 20_000 }, (_, i) => ({ id: String(i), owner: "owner" }));
    const started = performance.now();
    const groups = byOwner(relays);
    const elapsed = performance.now() - started;
    expect(groups.get("owner")).toHaveLength(20_000);
    expect(elapsed).toBeLessThan(1_000);
  });
});
