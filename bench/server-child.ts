/**
 * Entry point of a benchmark server child (forked by server-process.ts): it hosts either
 * our app (`createApp`) or the bare connect-node server, so that the server's CPU and
 * memory are its own and not mixed with the load generator's. Commands arrive over IPC:
 * `stats` (CPU time and heap), `histories` (the live histories' JSON size), `gc`, `heap-start` /
 * `heap-stop` (what the JS heap did in between, see heap-activity.ts), `profile-start` /
 * `profile-stop` (a CPU profile of just that stretch, written to a file), `close`.
 */
import { writeFile } from "node:fs/promises";
import { Session as InspectorSession } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";
import { createApp } from "../src/app/app.ts";
import { loadConfig } from "../src/app/config.ts";
import { MemoryPersistence } from "../test/support/memory-persistence.ts";
import { startBareServer } from "./bare-server.ts";
import { type HeapActivity, NO_HEAP_ACTIVITY, watchHeap } from "./heap-activity.ts";

/** What the parent asks the child to host. */
export interface ChildSpec {
  kind: "roz" | "bare";
  /** Configuration of our server (the child's own environment is not read; `OTEL_*` ones also go to it, for the SDK). */
  env?: Record<string, string>;
  /** `memory`: `MemoryPersistence` instead of the store (the persistence baseline). */
  persistence?: "store" | "memory";
}

export type ChildRequest = { id: number; type: "stats" | "gc" | "close" | "histories" | "heap-start" | "heap-stop" | "profile-start" | "profile-stop" };
export type ChildReply =
  | { type: "listening"; url: string }
  | { type: "failed"; error: string }
  | {
      id: number;
      type: "stats";
      cpuUserUs: number;
      cpuSystemUs: number;
      /** The main thread's own CPU time (user + system), µs: the rest is the database thread, V8's helpers and libuv's pool. */
      mainThreadCpuUs: number;
      heapUsed: number;
      heapTotal: number;
      /** Bytes V8 gives its young generation (new space). */
      youngTotal: number;
      external: number;
      sessions: number;
      /** Event-loop delay since the previous `stats`, ms. */
      loopDelayP99Ms: number;
      loopDelayMaxMs: number;
    }
  | { id: number; type: "done" }
  | ({ id: number; type: "heap" } & HeapActivity)
  /** The `.cpuprofile` written by `profile-stop`. */
  | { id: number; type: "profile"; path: string }
  /** The live sessions' histories as JSON (what the store keeps of them), bytes in all. */
  | { id: number; type: "histories"; bytes: number };

function send(reply: ChildReply): void {
  process.send?.(reply);
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.env.ROZ_BENCH_SPEC ?? "{}") as ChildSpec;
  let close: () => Promise<void>;
  let sessions = (): number => 0;
  let histories = async (): Promise<number> => 0;
  let url: string;
  if (spec.kind === "bare") {
    const bare = await startBareServer();
    url = bare.url;
    close = bare.close;
  } else {
    // The OpenTelemetry SDK reads its own variables (batching, headers) from the process.
    for (const [name, value] of Object.entries(spec.env ?? {})) if (name.startsWith("OTEL_")) process.env[name] = value;
    const config = loadConfig(spec.env ?? {});
    const app = await createApp(config, spec.persistence === "memory" ? { persistence: new MemoryPersistence() } : {});
    url = await app.listen();
    close = () => app.close();
    sessions = () => app.registry.all().length;
    histories = async () => {
      let bytes = 0;
      for (const session of app.registry.all()) {
        bytes += Buffer.byteLength(JSON.stringify(session.agent.history()), "utf8");
        // One session at a time: the streams of the others go on meanwhile.
        await new Promise((resolve) => setImmediate(resolve));
      }
      return bytes;
    };
  }

  let stopHeapWatch: (() => HeapActivity) | undefined;
  let profiler: InspectorSession | undefined;
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  process.on("message", (message: ChildRequest) => {
    void (async () => {
      switch (message.type) {
        case "stats": {
          const cpu = process.cpuUsage();
          const thread = process.threadCpuUsage();
          const mem = process.memoryUsage();
          send({
            id: message.id,
            type: "stats",
            cpuUserUs: cpu.user,
            cpuSystemUs: cpu.system,
            mainThreadCpuUs: thread.user + thread.system,
            heapUsed: mem.heapUsed,
            heapTotal: mem.heapTotal,
            youngTotal: getHeapSpaceStatistics().find((space) => space.space_name === "new_space")?.space_size ?? 0,
            external: mem.external,
            sessions: sessions(),
            loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
            loopDelayMaxMs: loopDelay.max / 1e6,
          });
          loopDelay.reset();
          return;
        }
        case "histories":
          send({ id: message.id, type: "histories", bytes: await histories() });
          return;
        case "heap-start":
          stopHeapWatch = watchHeap();
          send({ id: message.id, type: "done" });
          return;
        case "heap-stop": {
          const activity = stopHeapWatch?.() ?? NO_HEAP_ACTIVITY;
          stopHeapWatch = undefined;
          send({ id: message.id, type: "heap", ...activity });
          return;
        }
        case "profile-start":
          profiler = new InspectorSession();
          profiler.connect();
          await profiler.post("Profiler.enable");
          await profiler.post("Profiler.start");
          send({ id: message.id, type: "done" });
          return;
        case "profile-stop": {
          const path = join(tmpdir(), `roz-bench-${process.pid}-${Date.now()}.cpuprofile`);
          const result = await profiler?.post("Profiler.stop");
          profiler?.disconnect();
          profiler = undefined;
          await writeFile(path, JSON.stringify(result?.profile ?? { nodes: [], samples: [], timeDeltas: [] }));
          send({ id: message.id, type: "profile", path });
          return;
        }
        case "gc":
          globalThis.gc?.();
          globalThis.gc?.();
          send({ id: message.id, type: "done" });
          return;
        case "close":
          await close();
          send({ id: message.id, type: "done" });
          process.disconnect?.();
          process.exit(0);
      }
    })();
  });
  // The parent died or gave up on us: nothing will ever ask us to close.
  process.on("disconnect", () => process.exit(0));
  send({ type: "listening", url });
}

main().catch((err: unknown) => {
  send({ type: "failed", error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
});
