// The event-loop watchdog: blocks over 100 ms are counted and logged with what ran last, the
// loop delay is in /metrics, and the attacks on the loop (globs, long words, register_tools)
// leave another session's pings answered promptly.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventLoopWatchdog } from "../../src/app/event-loop-watchdog.ts";
import { globAttack, longWordAttack, registerToolsAttack } from "../support/attacks.ts";
import { STALL_BOUND_MS, startBystander } from "../support/bystander.ts";
import { type SpawnedServer, spawnServer } from "../support/server.ts";

describe("EventLoopWatchdog", () => {
  it("logs a block over its threshold with the operations noted last", async () => {
    const logged: Record<string, any>[] = [];
    const watchdog = new EventLoopWatchdog({ thresholdMs: 100, tickMs: 10, log: { warn: (obj) => void logged.push(obj) } });
    try {
      watchdog.note({ rpc: "StreamSession", request: "user_message", tenantId: "t1" });
      const until = performance.now() + 300;
      while (performance.now() < until); // the block under test
      const deadline = Date.now() + 5000;
      while (logged.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(logged[0]).toMatchObject({ blockedMs: expect.any(Number), recentOperations: [{ rpc: "StreamSession", request: "user_message", tenantId: "t1" }] });
      expect(logged[0]!["blockedMs"]).toBeGreaterThanOrEqual(200);
    } finally {
      watchdog.stop();
    }
  });
});

describe("attacks on the event loop, against a server process", () => {
  let server: SpawnedServer;
  beforeAll(async () => {
    server = await spawnServer({ ROZ_MAX_MESSAGE_BYTES: "8MiB" });
  });
  afterAll(() => server?.dispose());

  it("/metrics exports the loop delay and the block counter", async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(/^roz_nodejs_eventloop_lag_p99_seconds \S+/m);
    expect(text).toMatch(/^roz_nodejs_eventloop_lag_max_seconds \S+/m);
    expect(text).toMatch(/^roz_event_loop_blocks_total \d+/m);
  });

  // Regression sizes: a 100 KB word held BPE merging for seconds, and each 40,000-tool round is refused alike, so one
  // round shows it; `npm run bench -- abuse` replays the 4 MB word and three rounds.
  it("globs, a 100 KB word and a 40,000-tool register_tools: a bystander's pings stay prompt", async () => {
    const bystander = await startBystander(server.url);
    await globAttack(server.url);
    await longWordAttack(100_000)(server.url);
    await registerToolsAttack(1, 40_000)(server.url);
    const report = await bystander.stop();
    const blocks = server.logLines().filter((l) => l["msg"] === "event loop blocked");
    // The strict 50 ms target is the benchmark's; this bound fails only if an attack really holds the loop.
    expect(report.p99Ms, JSON.stringify({ report, blocks })).toBeLessThan(STALL_BOUND_MS);
    expect(
      blocks.every((b) => Number(b["blockedMs"]) < STALL_BOUND_MS),
      JSON.stringify(blocks),
    ).toBe(true);
  }, 120_000);
});
