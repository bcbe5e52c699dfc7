/**
 * Starts a benchmark server (ours or the bare baseline) in a child process and talks to
 * it: RSS from /proc/<pid>/status, CPU time and GC over IPC, a graceful close that is
 * turned into SIGKILL when it hangs; the heap's activity and a CPU profile over a stretch
 * the caller chooses.
 */
import { type ChildProcess, fork } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { serverNodeFlags } from "../test/support/server.ts";
import type { HeapActivity } from "./heap-activity.ts";
import type { ChildReply, ChildRequest, ChildSpec } from "./server-child.ts";
import { tempDir, within } from "./support.ts";

/** Settings every benchmark server of ours gets unless the section overrides them. */
export const benchServerDefaults: Record<string, string> = {
  ROZ_HOST: "127.0.0.1",
  ROZ_PORT: "0",
  ROZ_LOG_LEVEL: "silent",
  ROZ_SESSION_RATE_LIMIT_PER_MINUTE: "0",
  ROZ_RATE_LIMIT_PER_MINUTE: "0",
  ROZ_SHUTDOWN_GRACE_MS: "500",
  // Keepalives are measured nowhere; keep them out of the event streams.
  ROZ_KEEPALIVE_INTERVAL_MS: "3600000",
  ROZ_MAX_CONCURRENT_STREAMS: "5000",
  // The benches open thousands of sessions with one key (the abuse section sets its own cap).
  ROZ_MAX_STREAMS_PER_KEY: "100000",
  // ... and thousands of connections from one address (loopback).
  ROZ_MAX_CONNECTIONS_PER_ADDRESS: "0",
};

export interface CpuStats {
  /** User + system CPU time of the child so far, in microseconds. */
  cpuUs: number;
  /** The main thread's share of `cpuUs`. */
  mainThreadCpuUs: number;
  heapUsed: number;
  heapTotal: number;
  /** Bytes V8 gives its young generation. */
  youngTotal: number;
  external: number;
  sessions: number;
  /** Event-loop delay of the child since the previous `stats()`, ms. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

export interface ServerProcess {
  readonly url: string;
  readonly pid: number;
  /** Resident set size of the child in bytes (VmRSS). */
  rss(): Promise<number>;
  stats(): Promise<CpuStats>;
  /** The JSON size of the live sessions' histories, bytes. */
  histories(): Promise<number>;
  /** Runs the child's GC twice (it runs with --expose-gc). */
  gc(): Promise<void>;
  /** Starts watching the heap (see heap-activity.ts); `heapStop` reports what it did since. */
  heapStart(): Promise<void>;
  heapStop(): Promise<HeapActivity>;
  /** Starts a CPU profile; `profileStop` writes it and resolves with its path. */
  profileStart(): Promise<void>;
  profileStop(): Promise<string>;
  /** Closes the server and waits for the child to exit; resolves with the CPU profile's path when started with `profile`. */
  close(): Promise<string | undefined>;
}

/** `ROZ_BENCH_SERVER_ENV="NAME=value NAME2=value2"`: settings given to every server child last (A/B runs). */
function extraServerEnv(): Record<string, string> {
  const pairs = process.env.ROZ_BENCH_SERVER_ENV?.split(/\s+/).filter(Boolean) ?? [];
  return Object.fromEntries(
    pairs.map((pair) => {
      const eq = pair.indexOf("=");
      if (eq <= 0) throw new Error(`ROZ_BENCH_SERVER_ENV: expected NAME=value, got "${pair}"`);
      return [pair.slice(0, eq), pair.slice(eq + 1)];
    }),
  );
}

const childPath = fileURLToPath(new URL("./server-child.ts", import.meta.url));

/**
 * Forks the child with `spec` (our server gets a temporary ROZ_DATA_DIR and the defaults
 * above, then `spec.env`) and resolves once it listens.
 */
/** `profile`: the whole life of the server is profiled (from listening to `close`). */
export async function startServerProcess(spec: ChildSpec, options: { profile?: boolean } = {}): Promise<ServerProcess> {
  const data = await tempDir("roz-bench-data-");
  const full: ChildSpec = { ...spec, env: { ...benchServerDefaults, ROZ_DATA_DIR: data.path, ...spec.env, ...extraServerEnv() } };
  const child: ChildProcess = fork(childPath, [], {
    execArgv: [
      // As `npm start` launches roz; ROZ_BENCH_SERVER_FLAGS come after and win.
      ...serverNodeFlags,
      "--expose-gc",
      ...(process.env.ROZ_BENCH_SERVER_FLAGS?.split(/\s+/).filter(Boolean) ?? []),
    ],
    env: { PATH: process.env.PATH ?? "", ROZ_BENCH_SPEC: JSON.stringify(full) },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let nextId = 1;
  const waiting = new Map<number, (reply: ChildReply) => void>();
  child.on("message", (reply: ChildReply) => {
    if ("id" in reply) {
      waiting.get(reply.id)?.(reply);
      waiting.delete(reply.id);
    }
  });
  const ask = (type: ChildRequest["type"], timeoutMs = 30_000): Promise<ChildReply> => {
    const id = nextId++;
    const answer = new Promise<ChildReply>((resolve) => waiting.set(id, resolve));
    child.send({ id, type } satisfies ChildRequest);
    return within(answer, timeoutMs, `bench server ${type}`);
  };

  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
    await data.remove();
  };

  let url: string;
  try {
    url = await within(
      new Promise<string>((resolve, reject) => {
        child.on("message", (reply: ChildReply) => {
          if (reply.type === "listening") resolve(reply.url);
          if (reply.type === "failed") reject(new Error(`bench server failed to start:\n${reply.error}`));
        });
        void exited.then(() => reject(new Error(`bench server exited before listening (code ${child.exitCode})`)));
      }),
      30_000,
      "bench server start",
    );
  } catch (err) {
    await kill();
    throw err;
  }

  const server: ServerProcess = {
    url,
    pid: child.pid as number,
    async rss() {
      const status = await readFile(`/proc/${child.pid}/status`, "utf8");
      const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
      return Number(kb) * 1024;
    },
    async stats() {
      const r = await ask("stats");
      if (r.type !== "stats") throw new Error("unexpected reply");
      return {
        cpuUs: r.cpuUserUs + r.cpuSystemUs,
        mainThreadCpuUs: r.mainThreadCpuUs,
        heapUsed: r.heapUsed,
        heapTotal: r.heapTotal,
        youngTotal: r.youngTotal,
        external: r.external,
        sessions: r.sessions,
        loopDelayP99Ms: r.loopDelayP99Ms,
        loopDelayMaxMs: r.loopDelayMaxMs,
      };
    },
    async histories() {
      const r = await ask("histories", 120_000);
      if (r.type !== "histories") throw new Error("unexpected reply");
      return r.bytes;
    },
    async gc() {
      await ask("gc");
    },
    async heapStart() {
      await ask("heap-start");
    },
    async heapStop() {
      const r = await ask("heap-stop");
      if (r.type !== "heap") throw new Error("unexpected reply");
      const { id: _id, type: _type, ...activity } = r;
      return activity;
    },
    async profileStart() {
      await ask("profile-start");
    },
    async profileStop() {
      const r = await ask("profile-stop", 60_000);
      if (r.type !== "profile") throw new Error("unexpected reply");
      return r.path;
    },
    async close() {
      const profile = options.profile ? await server.profileStop().catch(() => undefined) : undefined;
      try {
        await ask("close", 20_000);
        await within(exited, 10_000, "bench server exit");
      } catch {
        // A hang at close must not hang the benchmark; the numbers are already taken.
      }
      await kill();
      return profile;
    },
  };
  if (options.profile) await server.profileStart();
  return server;
}
