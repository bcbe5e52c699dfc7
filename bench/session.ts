/**
 * Section "session" (issue 4): (1) deltas/s through one session vs the `openai` client
 * reading the same fake provider directly; (2) latency added per delta with many sessions
 * streaming at a steady rate; (3) latency added to a tool round trip; (4) memory per idle
 * session. The fake provider and the clients live in this process, our server in a child.
 */
import { startFakeOpenAI } from "../test/support/fake-openai/index.ts";
import { summarizeProfile } from "./profile.ts";
import { directLatency, directThroughput, type LatencyLoad, sessionLatency, sessionThroughput, type Throughput } from "./session-deltas.ts";
import { idleMemory } from "./session-idle.ts";
import { directRequestLatency, toolRoundTrips } from "./session-tools.ts";
import { startServerProcess } from "./server-process.ts";
import { type BenchOptions, fmt, ms, perSecond, pick, progress, ratio, type Row, sleep, summarize } from "./support.ts";

const THROUGHPUT_TARGET = 0.7;
const ADDED_P99_TARGET_MS = 5;
const IDLE_TARGET_BYTES = 200 * 1024;

/** Runs the section and returns its table rows. */
export async function runSession(options: BenchOptions): Promise<Row[]> {
  const rows: Row[] = [];
  const fake = await startFakeOpenAI();
  const server = await startServerProcess(
    { kind: "roz", env: { OPENAI_API_KEY: "bench", OPENAI_BASE_URL: fake.baseURL, ROZ_OPENAI_API: "chat" } },
    { profile: options.profile },
  );
  try {
    // (1) Throughput: alternate rounds, keep each side's best.
    const tokens = pick(options, 100_000, 30_000);
    const rounds = pick(options, 3, 2);
    progress(`session: throughput, ${rounds} round(s) of ${fmt(tokens)} deltas each way`);
    let ours: Throughput = { perSecond: 0, tailMs: 0 };
    let direct = 0;
    for (let i = 0; i < rounds; i++) {
      const o = await sessionThroughput(server, fake, tokens);
      if (o.perSecond > ours.perSecond) ours = o;
      direct = Math.max(direct, await directThroughput(fake, tokens));
    }
    const r = ours.perSecond / direct;
    rows.push(
      { metric: "deltas/s, 1 session: ours", measured: perSecond(ours.perSecond), note: `turn_complete ${fmt(ours.tailMs)} ms after the last delta (turn + events stored)` },
      { metric: "deltas/s, 1 session: openai client direct", measured: perSecond(direct) },
      { metric: "deltas/s, 1 session: ours / direct", target: `≥ ${THROUGHPUT_TARGET.toFixed(2)}`, measured: ratio(r), ok: r >= THROUGHPUT_TARGET },
    );

    // (2) Latency per delta under steady load.
    const load: LatencyLoad = { sessions: 200, rate: 100, seconds: pick(options, 6, 3), warmupMs: pick(options, 1000, 700) };
    progress(`session: delta latency, ${load.sessions} sessions x ${load.rate} deltas/s for ${load.seconds} s, each way`);
    const viaServer = await sessionLatency(server, fake, load);
    await sleep(200);
    const bare = await directLatency(fake, load);
    const added = { p50: viaServer.latency.p50 - bare.latency.p50, p99: viaServer.latency.p99 - bare.latency.p99 };
    rows.push(
      {
        metric: `delta latency p50/p99, ${load.sessions}x${load.rate}/s: ours`,
        measured: `${ms(viaServer.latency.p50)} / ${ms(viaServer.latency.p99)}`,
        note: `${fmt(viaServer.latency.n)} deltas, max ${ms(viaServer.latency.max)}, server CPU ${fmt((viaServer.serverCores ?? 0) * 100)}% of a core`,
      },
      { metric: `delta latency p50/p99, ${load.sessions}x${load.rate}/s: direct`, measured: `${ms(bare.latency.p50)} / ${ms(bare.latency.p99)}`, note: `${fmt(bare.latency.n)} deltas` },
      { metric: "delta latency added by the server, p50", measured: ms(added.p50) },
      { metric: "delta latency added by the server, p99", target: `< ${ADDED_P99_TARGET_MS} ms`, measured: ms(added.p99), ok: added.p99 < ADDED_P99_TARGET_MS },
    );

    // (3) Tool round trip.
    const turns = pick(options, 300, 100);
    progress(`session: tool round trips, ${turns} turns`);
    const tools = await toolRoundTrips(server, fake, turns, 10);
    const viaTools = summarize(tools.samples);
    const bareTools = summarize(await directRequestLatency(fake, tools.bodies));
    const addedTools = { p50: viaTools.p50 - bareTools.p50, p99: viaTools.p99 - bareTools.p99 };
    rows.push(
      { metric: "ToolResult → next model request p50/p99: ours", measured: `${ms(viaTools.p50)} / ${ms(viaTools.p99)}`, note: `${viaTools.n} round trips` },
      { metric: "same request sent by openai client directly", measured: `${ms(bareTools.p50)} / ${ms(bareTools.p99)}`, note: "create() → arrival at the fake" },
      { metric: "tool round trip added by the server, p50", measured: ms(addedTools.p50) },
      { metric: "tool round trip added by the server, p99", target: `< ${ADDED_P99_TARGET_MS} ms`, measured: ms(addedTools.p99), ok: addedTools.p99 < ADDED_P99_TARGET_MS },
    );
  } finally {
    const profile = await server.close();
    await fake.close();
    if (profile) summarizeProfile(profile, "session: our server (throughput, latency, tools)");
  }

  // (4) Idle sessions, each layout in a fresh server.
  const idle = pick(options, 2000, 1000);
  const layouts = pick(options, [20, idle], [10]);
  for (const connections of layouts) {
    progress(`session: ${fmt(idle)} idle sessions over ${fmt(connections)} connection(s)`);
    const m = await idleMemory(idle, connections);
    rows.push({
      metric: `RSS per idle session, ${fmt(idle)} over ${fmt(connections)} conn`,
      target: `< ${IDLE_TARGET_BYTES / 1024} KB`,
      measured: `${fmt(m.rssPerSession / 1024, 1)} KB`,
      ok: m.rssPerSession < IDLE_TARGET_BYTES,
      note: `V8 heap ${fmt(m.heapPerSession / 1024, 1)} KB/session`,
    });
  }
  return rows;
}
