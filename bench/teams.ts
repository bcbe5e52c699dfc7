/**
 * Section "teams": (a) TeamEvents per second from 8 workers of one task to 10 WatchTeam
 * watchers (gRPC over h2c, connect-node), with the latency a watcher adds after an event is
 * stored and published, against the same producers with no watcher; (b) WatchTeam replay of
 * a finished 10,000-event task, against reading the same rows from the store directly.
 * Producers append through the task's real `TaskLog` (store, then bus) in the server's
 * process; watchers are real clients in the same process, so their decoding shares the core.
 */
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createMemoryBus } from "../src/bus/index.ts";
import { AgentService } from "../src/gen/roz/v1/agent_pb.js";
import { encodeTeamEvent } from "../src/rpc/index.ts";
import { TaskLog } from "../src/teams/task-log.ts";
import { startServer } from "../test/support/server.ts";
import { type BenchOptions, fmt, ms, now, perSecond, pick, progress, type Row, summarize } from "./support.ts";

const WORKERS = 8;
const WATCHERS = 10;
const REPLAY_EVENTS = 10_000;
/** Events per second per worker for the latency run: a busy agent's pace, well below saturation. */
const PACED_PER_WORKER = 50;
const ADDED_P99_TARGET_MS = 5;
const REPLAY_TARGET_MS = 1_000;
const silent = { info() {}, warn() {}, error() {} };

export async function runTeams(options: BenchOptions): Promise<Row[]> {
  const bus = createMemoryBus();
  const server = await startServer({}, { bus });
  const store = server.app.store;
  const tenant = await store.ensureTenant("default");
  const env = await store.getDefaultEnvironment(tenant.id);
  const transport = createGrpcTransport({ baseUrl: server.url });
  const rpc = createClient(AgentService, transport);
  const newTask = async () => {
    const task = await store.createTask(tenant.id, { environmentId: env.id, prompt: "bench" });
    return { task, log: new TaskLog(task, { store, bus, encode: encodeTeamEvent, log: silent }) };
  };
  const durationMs = pick(options, 3_000, 1_000);

  /**
   * 8 producers append for `durationMs`, as fast as they can or each at `perWorker` events/s;
   * returns events/s, and when each seq was stored and published.
   */
  async function produce(log: TaskLog, perWorker?: number): Promise<{ rate: number; publishedAt: Map<number, number> }> {
    const publishedAt = new Map<number, number>();
    let seq = 0;
    const end = now() + durationMs;
    const started = now();
    await Promise.all(
      Array.from({ length: WORKERS }, async (_, w) => {
        // Paced workers start spread over one period: real workers do not tick in lockstep.
        if (perWorker !== undefined) await new Promise((resolve) => setTimeout(resolve, (w * 1000) / perWorker / WORKERS));
        for (let phase = 1; now() < end; phase++) {
          const mine = ++seq;
          await log.append({ type: "worker_phase", workerId: `w${w}`, phase, mode: "react" });
          publishedAt.set(mine, now());
          if (perWorker !== undefined) await new Promise((resolve) => setTimeout(resolve, 1000 / perWorker));
        }
      }),
    );
    return { rate: seq / ((now() - started) / 1000), publishedAt };
  }

  /** Runs `produce` with WATCHERS live watchers; returns its result, the added latencies and whether every watcher got everything. */
  async function watchedRun(perWorker?: number) {
    const { task, log } = await newTask();
    const receivedAt: Map<number, number>[] = [];
    const watchers = Array.from({ length: WATCHERS }, async (_, i) => {
      const got = new Map<number, number>();
      receivedAt[i] = got;
      for await (const e of rpc.watchTeam({ taskId: task.id })) got.set(Number(e.seq), now());
    });
    // Let every watcher reach its live phase before the producers start.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const result = await produce(log, perWorker);
    await log.end("completed");
    await Promise.all(watchers);
    const added: number[] = [];
    for (const got of receivedAt) for (const [seq, at] of got) added.push(at - (result.publishedAt.get(seq) ?? at));
    return { ...result, latency: summarize(added), complete: receivedAt.every((got) => got.size === result.publishedAt.size) };
  }

  try {
    progress("teams: producers alone");
    const alone = await produce((await newTask()).log);

    progress(`teams: producers flat out with ${WATCHERS} watchers`);
    const watched = await watchedRun();
    progress(`teams: ${WORKERS} workers at ${PACED_PER_WORKER} events/s each, ${WATCHERS} watchers`);
    const paced = await watchedRun(PACED_PER_WORKER);
    const lat = paced.latency;

    progress(`teams: replay of ${REPLAY_EVENTS} events`);
    const replayTask = await newTask();
    await Promise.all(
      Array.from({ length: REPLAY_EVENTS }, (_, i) => replayTask.log.append({ type: "worker_tool_call", workerId: `w${i % WORKERS}`, tool: "read_file" })),
    );
    await replayTask.log.end("completed");
    let t0 = now();
    let rows = 0;
    for (let after = 0; ; ) {
      const page = (await store.readTeamEvents(tenant.id, replayTask.task.id, { afterSeq: after, limit: 1000 })) ?? [];
      rows += page.length;
      if (page.length < 1000) break;
      after = page.at(-1)!.seq;
    }
    const storeMs = now() - t0;
    t0 = now();
    let replayed = 0;
    for await (const _ of rpc.watchTeam({ taskId: replayTask.task.id })) replayed++;
    const replayMs = now() - t0;

    return [
      { metric: `TeamEvents/s, ${WORKERS} workers, no watcher (baseline)`, measured: perSecond(alone.rate) },
      {
        metric: `TeamEvents/s, ${WORKERS} workers → ${WATCHERS} watchers`,
        measured: perSecond(watched.rate),
        note: `${fmt(watched.rate * WATCHERS)} deliveries/s; ratio to baseline ${fmt(watched.rate / alone.rate, 2)}; every watcher complete: ${watched.complete}`,
      },
      { metric: "  at saturation: watcher added latency p99", measured: ms(watched.latency.p99), note: "producers and watchers share one core" },
      {
        metric: `watcher added latency p50, ${WORKERS}×${PACED_PER_WORKER} events/s`,
        measured: ms(lat.p50),
        note: `${perSecond(paced.rate)} produced; every watcher complete: ${paced.complete}`,
      },
      {
        metric: `watcher added latency p99, ${WORKERS}×${PACED_PER_WORKER} events/s`,
        target: `< ${ADDED_P99_TARGET_MS} ms`,
        measured: ms(lat.p99),
        ok: lat.p99 < ADDED_P99_TARGET_MS,
        note: `max ${ms(lat.max)}, n=${lat.n} (published → received)`,
      },
      { metric: `store read of ${REPLAY_EVENTS} team events (baseline)`, measured: ms(storeMs), note: `${rows} rows` },
      {
        metric: `WatchTeam replay of ${REPLAY_EVENTS} events`,
        target: `< ${REPLAY_TARGET_MS} ms`,
        measured: ms(replayMs),
        ok: replayMs < REPLAY_TARGET_MS && replayed === REPLAY_EVENTS,
        note: `${perSecond(replayed / (replayMs / 1000))}; ${fmt(replayMs / storeMs, 1)}x the store read`,
      },
    ];
  } finally {
    await server.close();
    await bus.close();
  }
}
