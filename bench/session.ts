/**
 * Section "session": (1) deltas/s through one session vs the `openai` client
 * reading the same fake provider directly, and through @roz/client vs raw connect-node;
 * (2) latency added to a tool round trip; (3) memory per idle session. The fake provider and the clients live in this process, our
 * server in a child. Latency under load with many sessions is section `scale`.
 */
import { type FakeOpenAI, startFakeOpenAI } from "../test/support/fake-openai/index.ts";
import { clientLibraryRows } from "./client-library.ts";
import { summarizeProfile } from "./profile.ts";
import { bareStreamThroughput, directThroughput, sessionThroughput, type Throughput } from "./session-deltas.ts";
import { idleMemory } from "./session-idle.ts";
import { directRequestLatency, toolRoundTrips } from "./session-tools.ts";
import { type ServerProcess, startServerProcess } from "./server-process.ts";
import { type BenchOptions, fmt, ms, perSecond, pick, progress, ratio, type Row, summarize } from "./support.ts";

const THROUGHPUT_TARGET = 0.7;
const ADDED_P99_TARGET_MS = 5;
const IDLE_TARGET_BYTES = 200 * 1024;

async function throughputRows(options: BenchOptions, server: ServerProcess, fake: FakeOpenAI): Promise<Row[]> {
  // Alternate rounds, keep each side's best: noise on the shared machine hurts no side alone.
  const tokens = pick(options, 100_000, 20_000);
  const rounds = pick(options, 2, 1);
  progress(`session: throughput, ${rounds} round(s) of ${fmt(tokens)} deltas: ours, openai direct, bare transport`);
  const bare = await startServerProcess({ kind: "bare" });
  let ours: Throughput = { perSecond: 0, cpuUs: 0 };
  let direct = 0;
  let ceiling = 0;
  try {
    for (let i = 0; i < rounds; i++) {
      const o = await sessionThroughput(server, fake, tokens);
      if (o.perSecond > ours.perSecond) ours = o;
      direct = Math.max(direct, await directThroughput(fake, tokens));
      ceiling = Math.max(ceiling, await bareStreamThroughput(bare, tokens));
    }
  } finally {
    await bare.close();
  }
  const r = ours.perSecond / direct;
  return [
    { metric: "deltas/s, 1 session: ours", measured: perSecond(ours.perSecond), note: `${fmt(tokens)} deltas, server CPU ${fmt(ours.cpuUs, 1)} µs/delta` },
    { metric: "deltas/s, 1 session: openai client direct", measured: perSecond(direct) },
    { metric: "deltas/s, 1 session: ours / direct", target: `≥ ${THROUGHPUT_TARGET.toFixed(2)}`, measured: ratio(r), ok: r >= THROUGHPUT_TARGET },
    {
      metric: "TextDelta msgs/s, bare connect-node stream",
      measured: perSecond(ceiling),
      note: `one message per delta caps any server at this (ours = ${ratio(ours.perSecond / ceiling)} of it)`,
    },
  ];
}

async function toolRows(options: BenchOptions, server: ServerProcess, fake: FakeOpenAI): Promise<Row[]> {
  const turns = pick(options, 300, 50);
  progress(`session: tool round trips, ${turns} turns, then the same requests sent directly`);
  const tools = await toolRoundTrips(server, fake, turns, 10);
  const via = summarize(tools.samples);
  const bare = summarize(await directRequestLatency(fake, tools.bodies));
  const added = { p50: via.p50 - bare.p50, p99: via.p99 - bare.p99 };
  progress(`session: the same tool turns with a steered message sent just before each ToolResult`);
  const steered = summarize((await toolRoundTrips(server, fake, turns, 10, { steer: true })).samples);
  return [
    { metric: "ToolResult → next model request: ours", measured: `${ms(via.p50)} / ${ms(via.p99)}`, note: `p50 / p99 of ${via.n} round trips` },
    { metric: "same request, openai client directly", measured: `${ms(bare.p50)} / ${ms(bare.p99)}`, note: "create() → arrival at the fake" },
    { metric: "tool round trip added, p50", measured: ms(added.p50) },
    { metric: "tool round trip added, p99", target: `< ${ADDED_P99_TARGET_MS} ms`, measured: ms(added.p99), ok: added.p99 < ADDED_P99_TARGET_MS },
    {
      metric: "steer + ToolResult → model request carrying both",
      measured: `${ms(steered.p50)} / ${ms(steered.p99)}`,
      note: `p50 / p99 of ${steered.n}; a steer costs ${ms(steered.p50 - via.p50)} / ${ms(steered.p99 - via.p99)} over the plain round trip`,
    },
  ];
}

async function idleRows(options: BenchOptions): Promise<Row[]> {
  const rows: Row[] = [];
  const idle = pick(options, 2000, 300);
  // 20 connections: sessions multiplexed; one per session: what separate client processes cost.
  for (const connections of pick(options, [20, idle], [10])) {
    progress(`session: ${fmt(idle)} idle sessions over ${fmt(connections)} connection(s), fresh server`);
    const m = await idleMemory(idle, connections);
    rows.push({
      metric: `RSS per idle session, ${fmt(idle)} on ${fmt(connections)} conn`,
      target: `< ${IDLE_TARGET_BYTES / 1024} KB`,
      measured: `${fmt(m.rssPerSession / 1024, 1)} KB`,
      ok: m.rssPerSession < IDLE_TARGET_BYTES,
      note: `V8 heap ${fmt(m.heapPerSession / 1024, 1)} KB/session`,
    });
  }
  return rows;
}

/** Runs the section and returns its table rows. */
export async function runSession(options: BenchOptions): Promise<Row[]> {
  const rows: Row[] = [];
  const fake = await startFakeOpenAI();
  const server = await startServerProcess(
    { kind: "roz", env: { OPENAI_API_KEY: "bench", OPENAI_BASE_URL: fake.baseURL, ROZ_OPENAI_API: "chat" } },
    { profile: options.profile },
  );
  try {
    rows.push(...(await throughputRows(options, server, fake)));
    rows.push(...(await clientLibraryRows(options, server, fake)));
    rows.push(...(await toolRows(options, server, fake)));
  } finally {
    const profile = await server.close();
    await fake.close();
    if (profile) summarizeProfile(profile, "session: our server (throughput, latency, tools)");
  }
  rows.push(...(await idleRows(options)));
  return rows;
}
