/**
 * Entry point of a benchmark server child (forked by server-process.ts): it hosts either
 * our app (`createApp`) or the bare connect-node server, so that the server's CPU and
 * memory are its own and not mixed with the load generator's. Commands arrive over IPC:
 * `stats` (CPU time and heap), `histories` (the live histories' JSON size), `gc`, `close` (graceful close, then exit 0 so that
 * `--cpu-prof` writes its profile).
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";
import { createApp } from "../src/app/app.ts";
import { loadConfig } from "../src/app/config.ts";
import { MemoryPersistence } from "../test/support/memory-persistence.ts";
import { startBareServer } from "./bare-server.ts";

/** What the parent asks the child to host. */
export interface ChildSpec {
  kind: "roz" | "bare";
  /** Configuration of our server (the child's own environment is not read; `OTEL_*` ones also go to it, for the SDK). */
  env?: Record<string, string>;
  /** `memory`: `MemoryPersistence` instead of the store (the persistence baseline). */
  persistence?: "store" | "memory";
}

export type ChildRequest = { id: number; type: "stats" | "gc" | "close" | "histories" };
export type ChildReply =
  | { type: "listening"; url: string }
  | { type: "failed"; error: string }
  | {
      id: number;
      type: "stats";
      cpuUserUs: number;
      cpuSystemUs: number;
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

  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  process.on("message", (message: ChildRequest) => {
    void (async () => {
      switch (message.type) {
        case "stats": {
          const cpu = process.cpuUsage();
          const mem = process.memoryUsage();
          send({
            id: message.id,
            type: "stats",
            cpuUserUs: cpu.user,
            cpuSystemUs: cpu.system,
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
        case "gc":
          globalThis.gc?.();
          globalThis.gc?.();
          send({ id: message.id, type: "done" });
          return;
        case "close":
          await close();
          send({ id: message.id, type: "done" });
          process.disconnect?.();
          // Exit normally (not by a signal) so that --cpu-prof writes its file.
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
