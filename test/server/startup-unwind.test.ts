// A start-up that fails half way closes what it had opened: the bus, and the heartbeat that
// would otherwise keep writing to a store nobody uses any more.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { expect, it, vi } from "vitest";
import { createApp } from "../../src/app/app.ts";
import { loadConfig } from "../../src/app/config.ts";
import type { EventBus } from "../../src/bus/index.ts";
import { openStore, type Store } from "../../src/store/index.ts";

/** Every bus the app opens, and whether it was closed. */
const buses = vi.hoisted(() => [] as { closed: boolean }[]);

vi.mock("../../src/bus/index.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../src/bus/index.ts")>();
  return {
    ...real,
    createMemoryBus: (...args: Parameters<typeof real.createMemoryBus>): EventBus => {
      const bus = real.createMemoryBus(...args);
      const opened = { closed: false };
      buses.push(opened);
      const close = bus.close.bind(bus);
      bus.close = async () => {
        opened.closed = true;
        await close();
      };
      return bus;
    },
  };
});

/** `store` counting its heartbeats, whose task queries (what recovering teams reads first) fail. */
function failingRecovery(store: Store): { store: Store; heartbeats: () => number } {
  let heartbeats = 0;
  const wrapped = new Proxy(store, {
    get(target, property) {
      if (property === "orphanedTasks") return () => Promise.reject(new Error("task table unreadable"));
      if (property === "heartbeatNode") {
        return (...args: Parameters<Store["heartbeatNode"]>) => {
          heartbeats++;
          return target.heartbeatNode(...args);
        };
      }
      const value: unknown = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store: wrapped, heartbeats: () => heartbeats };
}

it("when recovering teams fails, start-up rejects, closes the bus it opened and stops the heartbeat", async ({ onTestFinished }) => {
  const dataDir = await mkdtemp(join(tmpdir(), "roz-unwind-"));
  onTestFinished(() => rm(dataDir, { recursive: true, force: true }));
  const config = loadConfig({
    ROZ_HOST: "127.0.0.1",
    ROZ_PORT: "0",
    ROZ_LOG_LEVEL: "silent",
    ROZ_AUTH: "disabled",
    ROZ_DATA_DIR: dataDir,
    ROZ_NODE_HEARTBEAT_MS: "100",
  });
  const real = await openStore({ dataDir, eventRetention: { maxEventsPerSession: config.eventRetention } });
  onTestFinished(() => real.close());
  const { store, heartbeats } = failingRecovery(real);

  await expect(createApp(config, { store })).rejects.toThrow("task table unreadable");

  expect(buses).toHaveLength(1);
  expect(buses[0]?.closed).toBe(true);
  const written = heartbeats();
  expect(written).toBeGreaterThan(0);
  await delay(5 * config.nodeHeartbeatMs);
  expect(heartbeats()).toBe(written);
});
