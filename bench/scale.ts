/**
 * Section "scale": one node under many sessions.
 * (1) The latency curve: 50…400 sessions each streaming 100 deltas/s through our server,
 *     against the same load read from the fake provider directly by `openai` clients. The
 *     fake provider and the clients run in children of their own (load-child.ts), our server
 *     in another; the order of the contenders rotates between rounds. The added latency is the p99 of
 *     per-delta differences: delta k of session i through the server minus delta k of
 *     session i read directly in the same round (both paced from their request by the fake).
 *     A third contender gives the transport's floor on this machine: the bare connect-node
 *     server (bare-server.ts) writing the same number of stamped TextDeltas at the same
 *     pace on as many streams, its CPU per delta measured like ours.
 * (2) 10,000 idle sessions (each its own HTTP/2 stream, on 100 connections): RSS of the
 *     server, and pings on new connections meanwhile.
 */
import { type AgentClient, type BenchStream, connectClients, finish, openStream, ping, startSession } from "./client.ts";
import type { IpcChild } from "./ipc.ts";
import type { Contender, RunResult } from "./load-child.ts";
import { type Load, type LoadRig, overRounds, pairedDifferences, pooled, RATE, rotated, runLoad, spread, startClients, startFake } from "./paced-load.ts";
import { type HeapActivity, NO_HEAP_ACTIVITY } from "./heap-activity.ts";
import { summarizeProfile } from "./profile.ts";
import { type ServerProcess, startServerProcess } from "./server-process.ts";
import { type BenchOptions, fmt, mapLimit, ms, now, pick, progress, type Row, type Summary, summarize } from "./support.ts";

/** Added p99 per delta at 100 sessions, ms; at 200, at most this many times bare connect-node's own delta p99. */
const ADDED_P99_TARGET_MS = 5;
const ADDED_P99_TARGET_SESSIONS = 100;
const ADDED_P99_BARE_FACTOR = 2;
const ADDED_P99_BARE_SESSIONS = 200;
/** Server CPU per delta, ours ÷ bare connect-node's, at this many sessions or fewer. */
const CPU_RATIO_TARGET = 1.1;
const CPU_RATIO_MAX_SESSIONS = 200;
/** Server event-loop delay p99 at this many sessions or fewer, ms. */
const LOOP_P99_TARGET_MS = 5;
const LOOP_P99_MAX_SESSIONS = 100;
/** JS heap bytes that survive a scavenge, per delta. */
const SURVIVED_TARGET_BYTES = 100;
/** The row whose rounds `--profile` profiles. */
const PROFILED_SESSIONS = 100;
const IDLE_RSS_TARGET = 1024 ** 3;
/** A ping on a new connection among the idle sessions: p99 at most this many times the bare server's. */
const NEW_CONNECTION_PING_BARE_FACTOR = 2;
/** The uncounted warm-up of the latency curve, through every contender: 30,000 deltas. */
const WARM_UP = { sessions: 100, seconds: 3 };

/** One round of one load: both contenders' figures and the paired difference. */
interface Round {
  ours: {
    p50: number;
    p99: number;
    cpuUsPerDelta: number;
    mainThreadShare: number;
    cores: number;
    loopP99Ms: number;
    clientLoopP99Ms: number;
    heap: HeapActivity;
  };
  /** `clientCpuUsPerDelta`: what the `openai` clients spent reading the provider's stream directly, per delta. */
  direct: { p50: number; p99: number; clientLoopP99Ms: number; clientCpuUsPerDelta: number };
  bare: { p50: number; p99: number; cpuUsPerDelta: number; mainThreadShare: number; heap: HeapActivity };
  added: { p50: number; p99: number; pairs: number };
  fakeLoopP99Ms: number;
}

/** A run's heap figures with its bytes divided by its deltas (the counts and pauses stay per run). */
const bytesPerDelta = (activity: HeapActivity, deltas: number): HeapActivity => ({
  ...activity,
  allocatedBytes: activity.allocatedBytes / deltas,
  survivedBytes: activity.survivedBytes / deltas,
});

/** One point of the curve (`npm run bench` saves these in its JSON and draws them). */
export interface CurvePoint {
  sessions: number;
  rate: number;
  rounds: Round[];
}

interface Rig extends LoadRig {
  server: ServerProcess;
  bare: ServerProcess;
}

async function measure(
  rig: Rig,
  load: Load,
  contender: Contender,
): Promise<{ run: RunResult; cpuUs: number; mainThreadCpuUs: number; wallMs: number; loopP99Ms: number; heap: HeapActivity }> {
  // `direct` has no server of ours: its figures come from the idle server and mean nothing.
  const server = contender === "bare" ? rig.bare : rig.server;
  const watched = contender !== "direct";
  let heap = NO_HEAP_ACTIVITY;
  let started = false;
  // Around the run: the heap watch starts after the first sample and stops before the second.
  const sample = async () => {
    if (started && watched) heap = await server.heapStop();
    const stats = await server.stats();
    if (!started && watched) await server.heapStart();
    started = true;
    return stats;
  };
  const { run, wallMs, before, after } = await runLoad(rig, load, contender, server.url, sample);
  return {
    run,
    cpuUs: after.cpuUs - before.cpuUs,
    mainThreadCpuUs: after.mainThreadCpuUs - before.mainThreadCpuUs,
    wallMs,
    loopP99Ms: after.loopDelayP99Ms,
    heap,
  };
}

const CONTENDERS: Contender[] = ["ours", "direct", "bare"];

/** One round of `load`, the contenders in the order of round `index` (rotated each round). */
async function round(rig: Rig, load: Load, index: number): Promise<Round> {
  const order = rotated(CONTENDERS, index);
  const results: Partial<Record<Contender, Awaited<ReturnType<typeof measure>>>> = {};
  for (const contender of order) results[contender] = await measure(rig, load, contender);
  const fakeLoop = await rig.fake.ask<{ loopP99Ms: number }>("loop");
  const o = results.ours!;
  const d = results.direct!;
  const b = results.bare!;
  const os = summarize(pooled(o.run.latencies, load.warmup));
  const ds = summarize(pooled(d.run.latencies, load.warmup));
  const diffs = summarize(pairedDifferences(o.run.latencies, d.run.latencies, load.warmup));
  const bs = summarize(pooled(b.run.latencies, load.warmup));
  const deltas = load.sessions * load.tokens;
  return {
    ours: {
      p50: os.p50,
      p99: os.p99,
      cpuUsPerDelta: o.cpuUs / deltas,
      mainThreadShare: o.mainThreadCpuUs / o.cpuUs,
      cores: o.cpuUs / 1000 / o.wallMs,
      loopP99Ms: o.loopP99Ms,
      clientLoopP99Ms: o.run.loopP99Ms,
      heap: bytesPerDelta(o.heap, deltas),
    },
    direct: { p50: ds.p50, p99: ds.p99, clientLoopP99Ms: d.run.loopP99Ms, clientCpuUsPerDelta: d.run.cpuUs / deltas },
    bare: { p50: bs.p50, p99: bs.p99, cpuUsPerDelta: b.cpuUs / deltas, mainThreadShare: b.mainThreadCpuUs / b.cpuUs, heap: bytesPerDelta(b.heap, deltas) },
    added: { p50: diffs.p50, p99: diffs.p99, pairs: diffs.n },
    fakeLoopP99Ms: fakeLoop.loopP99Ms,
  };
}

function curveRows(point: CurvePoint): Row[] {
  const label = `${point.sessions}x${point.rate}/s`;
  const at = (of: (r: Round) => number) => overRounds(point.rounds, of);
  const addedTarget =
    point.sessions === ADDED_P99_TARGET_SESSIONS
      ? ADDED_P99_TARGET_MS
      : point.sessions === ADDED_P99_BARE_SESSIONS
        ? ADDED_P99_BARE_FACTOR * at((r) => r.bare.p99).median
        : undefined;
  const added99 = at((r) => r.added.p99);
  const added50 = at((r) => r.added.p50);
  const cpu = at((r) => r.ours.cpuUsPerDelta);
  const allocated = at((r) => r.ours.heap.allocatedBytes);
  const bareAllocated = at((r) => r.bare.heap.allocatedBytes);
  const survived = at((r) => r.ours.heap.survivedBytes);
  const bareSurvived = at((r) => r.bare.heap.survivedBytes);
  const gcPause = at((r) => r.ours.heap.pauseMs);
  const scavenges = at((r) => r.ours.heap.scavenges);
  const bareCpu = at((r) => r.bare.cpuUsPerDelta);
  const readCpu = at((r) => r.direct.clientCpuUsPerDelta);
  const bareP99 = at((r) => r.bare.p99);
  const cpuRatio = at((r) => r.ours.cpuUsPerDelta / r.bare.cpuUsPerDelta);
  const oursP50 = at((r) => r.ours.p50);
  const oursP99 = at((r) => r.ours.p99);
  const directP50 = at((r) => r.direct.p50);
  const directP99 = at((r) => r.direct.p99);
  const loop = at((r) => r.ours.loopP99Ms);
  const cores = at((r) => r.ours.cores);
  const mainShare = at((r) => r.ours.mainThreadShare);
  const bareMainShare = at((r) => r.bare.mainThreadShare);
  const loadLoop = at((r) => Math.max(r.ours.clientLoopP99Ms, r.direct.clientLoopP99Ms, r.fakeLoopP99Ms));
  const n = point.rounds.length;
  const medianOf = `median of ${n} round(s)`;
  return [
    {
      metric: `${label}: ours p50 / p99`,
      measured: `${ms(oursP50.median)} / ${ms(oursP99.median)}`,
      value: oursP99.median,
      note: `${medianOf}; p99 ${spread(oursP99)}`,
    },
    {
      metric: `${label}: direct p50 / p99`,
      measured: `${ms(directP50.median)} / ${ms(directP99.median)}`,
      value: directP99.median,
      note: `p99 ${spread(directP99)}; load generator event-loop p99 ≤ ${fmt(loadLoop.max, 1)} ms`,
    },
    { metric: `${label}: added per delta, p50`, measured: ms(added50.median), note: spread(added50) },
    {
      metric: `${label}: added per delta, p99`,
      measured: ms(added99.median),
      note: `p99 of ${fmt(point.rounds[0]?.added.pairs ?? 0)} paired deltas per round; ${spread(added99)}${point.sessions === ADDED_P99_BARE_SESSIONS ? ` (target: ${ADDED_P99_BARE_FACTOR}x bare's own delta p99)` : ""}`,
      ...(addedTarget !== undefined ? { target: `≤ ${ms(addedTarget)}`, ok: added99.median <= addedTarget } : {}),
    },
    {
      metric: `${label}: server CPU per delta`,
      measured: `${fmt(cpu.median, 1)} µs`,
      note: `${fmt(cores.median * 100)}% of a core, ${fmt(mainShare.median * 100)}% of it on the main thread; ${spread(cpu, 1)}`,
    },
    {
      metric: `${label}: reading the provider's stream, CPU per delta`,
      measured: `${fmt(readCpu.median, 1)} µs`,
      note: `the direct contender's openai clients (SSE and JSON of each chunk, one connection each): work our server also does, besides writing; ${spread(readCpu, 1)}`,
    },
    {
      metric: `${label}: JS heap allocated per delta`,
      measured: `${fmt(allocated.median)} B`,
      note: `bare connect-node ${fmt(bareAllocated.median)} B; ${spread(allocated, 0)}`,
    },
    {
      metric: `${label}: bytes surviving a scavenge per delta`,
      measured: `${fmt(survived.median)} B`,
      ...(point.sessions <= CPU_RATIO_MAX_SESSIONS ? { target: `≤ ${SURVIVED_TARGET_BYTES} B`, ok: survived.median <= SURVIVED_TARGET_BYTES } : {}),
      note: `bare ${fmt(bareSurvived.median)} B; ${spread(survived, 0)}; ${fmt(scavenges.median)} scavenges, ${fmt(gcPause.median)} ms in GC per run`,
    },
    {
      metric: `${label}: bare connect-node CPU per delta`,
      measured: `${fmt(bareCpu.median, 1)} µs`,
      note: `the transport's floor on this machine, same pace (${spread(bareCpu, 1)}), ${fmt(bareMainShare.median * 100)}% on the main thread; its delta latency p99 ${ms(bareP99.median)}`,
    },
    {
      metric: `${label}: CPU per delta, ours / bare (median of per-round ratios)`,
      measured: fmt(cpuRatio.median, 2),
      ...(point.sessions <= CPU_RATIO_MAX_SESSIONS ? { target: `≤ ${CPU_RATIO_TARGET}`, ok: cpuRatio.median <= CPU_RATIO_TARGET } : {}),
      note: `${spread(cpuRatio)}; ratio of the medians ${fmt(cpu.median / bareCpu.median, 2)}`,
    },
    {
      metric: `${label}: server event-loop delay p99`,
      measured: ms(loop.median),
      ...(point.sessions <= LOOP_P99_MAX_SESSIONS ? { target: `≤ ${LOOP_P99_TARGET_MS} ms`, ok: loop.median <= LOOP_P99_TARGET_MS } : {}),
      note: spread(loop),
    },
  ];
}

async function latencyCurve(options: BenchOptions): Promise<{ rows: Row[]; curve: CurvePoint[] }> {
  const loads = pick(options, [50, 100, 200, 400], [50, 100, 200]);
  const rounds = pick(options, 2, 2);
  const seconds = pick(options, 3, 1.5);
  const tokens = Math.round(RATE * seconds);
  const warmup = Math.round(RATE * pick(options, 0.5, 0.3));
  const rows: Row[] = [];
  const curve: CurvePoint[] = [];
  const { fake, fakeBaseURL } = await startFake();
  let clients: IpcChild | undefined;
  let server: ServerProcess | undefined;
  let bare: ServerProcess | undefined;
  try {
    server = await startServerProcess({ kind: "roz", env: { OPENAI_API_KEY: "bench", OPENAI_BASE_URL: fakeBaseURL, ROZ_OPENAI_API: "chat" } });
    bare = await startServerProcess({ kind: "bare" });
    clients = await startClients();
    const rig: Rig = { server, bare, fake, clients, fakeBaseURL };
    // Not counted: loads every code path (the tokenizer's tables) in all three processes, and
    // runs long enough for V8 to settle (optimized code, a young generation grown to the
    // allocation rate): our server's CPU per delta falls over the first 30,000 deltas or so
    // (50 sessions: 128, 92, then 75 µs per round of 15,000), and after a warm-up of half a
    // second the first measured load still paid for it.
    progress(`scale: warm-up round, ${WARM_UP.sessions} sessions for ${WARM_UP.seconds} s`);
    await round(rig, { sessions: WARM_UP.sessions, tokens: Math.round(RATE * WARM_UP.seconds), warmup: 0 }, 0);
    for (const sessions of loads) {
      progress(`scale: ${sessions} sessions x ${RATE} deltas/s for ${seconds} s, ${rounds} round(s) rotating ours, direct and bare`);
      const point: CurvePoint = { sessions, rate: RATE, rounds: [] };
      // Only this row's rounds are profiled: warm-up, start-up and the other loads stay out.
      const profiled = options.profile && sessions === PROFILED_SESSIONS;
      if (profiled) await server.profileStart();
      for (let r = 0; r < rounds; r++) point.rounds.push(await round(rig, { sessions, tokens, warmup }, r));
      if (profiled) summarizeProfile(await server.profileStop(), `scale: our server, the ${sessions}-session rounds (idle time left out)`);
      curve.push(point);
      rows.push(...curveRows(point));
    }
  } finally {
    await server?.close();
    await bare?.close();
    await clients?.close();
    await fake.close();
  }
  return { rows, curve };
}

/** Pings on `count` fresh connections: the first one's time (connect included) and the later ones'. */
async function newConnectionPings(url: string, count: number, perConnection: number): Promise<{ first: number[]; later: number[] }> {
  const first: number[] = [];
  const later: number[] = [];
  const pingOnce = async (stream: BenchStream): Promise<number> => {
    const t0 = now();
    stream.send(ping);
    for (let r = await stream.next(); r?.response.case !== "pong"; r = await stream.next()) {
      if (r === undefined) throw new Error("stream ended during ping");
    }
    return now() - t0;
  };
  for (let c = 0; c < count; c++) {
    const conn = connectClients(url, 1);
    try {
      const stream = openStream(conn.clients[0] as AgentClient);
      first.push(await pingOnce(stream));
      for (let i = 0; i < perConnection; i++) later.push(await pingOnce(stream));
      stream.abort();
    } finally {
      conn.close();
    }
  }
  return { first, later };
}

/** New connections pinged once, uncounted, before the counted ones. */
const WARM_UP_CONNECTIONS = 20;

/** The first pings of `count` new connections to the bare connect-node server, warmed up like ours. */
async function bareNewConnectionPings(count: number): Promise<Summary> {
  const bare = await startServerProcess({ kind: "bare" });
  try {
    await newConnectionPings(bare.url, WARM_UP_CONNECTIONS, 1);
    return summarize((await newConnectionPings(bare.url, count, 0)).first);
  } finally {
    await bare.close();
  }
}

async function idleAtScale(options: BenchOptions): Promise<Row[]> {
  const sessions = pick(options, 10_000, 2000);
  const connections = pick(options, 100, 20);
  progress(`scale: ${fmt(sessions)} idle sessions on ${connections} connections, then pings on new connections`);
  // Keepalives at their default interval: an idle session in production has that timer too.
  const server = await startServerProcess({ kind: "roz", env: { ROZ_KEEPALIVE_INTERVAL_MS: "15000" } });
  const conn = connectClients(server.url, connections);
  try {
    const baseRss = await server.rss();
    const open = await mapLimit(sessions, 200, (i) => startSession(conn.clients[i % connections] as AgentClient));
    await server.gc();
    const rss = await server.rss();
    const count = pick(options, 50, 20);
    // Not counted: the first connections of a process run cold code (the client's above all:
    // its connection path ran only `connections` times), as they do against the bare server.
    await newConnectionPings(server.url, WARM_UP_CONNECTIONS, 1);
    const pings = await newConnectionPings(server.url, count, 10);
    const first = summarize(pings.first);
    const later = summarize(pings.later);
    await mapLimit(open.length, 500, (i) => finish((open[i] as (typeof open)[number]).stream));
    const bare = await bareNewConnectionPings(count);
    return [
      {
        metric: `RSS with ${fmt(sessions)} idle sessions on ${connections} conn`,
        ...(sessions === 10_000 ? { target: "< 1 GB", ok: rss < IDLE_RSS_TARGET } : {}),
        measured: `${fmt(rss / 1024 ** 2)} MB`,
        value: rss / 1024 ** 2,
        note: `${fmt((rss - baseRss) / sessions / 1024, 1)} KB per session over the empty server's ${fmt(baseRss / 1024 ** 2)} MB`,
      },
      {
        metric: `ping on a new connection (connect included), p99`,
        target: `≤ ${NEW_CONNECTION_PING_BARE_FACTOR}x bare`,
        measured: ms(first.p99),
        ok: first.p99 <= NEW_CONNECTION_PING_BARE_FACTOR * bare.p99,
        note: `${first.n} new connections while ${fmt(sessions)} sessions are open; p50 ${ms(first.p50)}; ${fmt(first.p99 / bare.p99, 2)}x bare's`,
      },
      {
        metric: `bare connect-node: ping on a new connection, p99`,
        measured: ms(bare.p99),
        value: bare.p99,
        note: `the same pings against the bare server (no sessions): this machine's floor; p50 ${ms(bare.p50)}`,
      },
      { metric: `later pings on those connections, p50 / p99`, measured: `${ms(later.p50)} / ${ms(later.p99)}`, value: later.p99 },
    ];
  } finally {
    conn.close();
    await server.close();
  }
}

/** Runs the section; `curve` is kept for the saved results (JSON and SVG chart). */
export async function runScale(options: BenchOptions): Promise<Row[]> {
  const { rows, curve } = await latencyCurve(options);
  options.figures.curve = curve;
  return [...rows, ...(await idleAtScale(options))];
}
