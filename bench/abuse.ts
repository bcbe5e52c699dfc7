/**
 * Section "abuse": each attack of the resilience report against our server (a child
 * process), next to a bystander session that pings every 10 ms. For each attack: the longest
 * event-loop block of the server meanwhile and the bystander's p99 round trip (targets: both
 * under 50 ms) and its peak RSS (under 1 GB); then, with --quick off, whether the idle
 * server's RSS comes back within 25 % of its baseline within two minutes. The baseline is the bystander alone. The
 * bystander runs in a process of its own, the attacks in the driver.
 */
import {
  type Attack,
  deepJsonAttack,
  deepRpcJsonAttack,
  globAttack,
  longWordAttack,
  noStartAttack,
  oversizedAttack,
  rapidResetAttack,
  registerToolsAttack,
  sendToSessionToolsAttack,
  slowSocketsAttack,
} from "../test/support/attacks.ts";
import type { BystanderReport } from "../test/support/bystander.ts";
import { forkChild, type IpcChild } from "./ipc.ts";
import { loadChild } from "./paced-load.ts";
import { startServerProcess, type ServerProcess } from "./server-process.ts";
import { type BenchOptions, fmt, ms, pick, progress, type Row, sleep } from "./support.ts";

const TARGET_MS = 50;
const MB = 1024 * 1024;

const MAX_RSS = 1024 * MB;
/** After the attacks, the idle server's RSS must come back within this factor of its baseline… */
const IDLE_RSS_FACTOR = 1.25;
/** …within this long. */
const IDLE_WAIT_MS = 120_000;

/** What of the RSS is V8's heap: the part in use, and the part it holds. */
function heapNote(stats: { heapUsed: number; heapTotal: number; youngTotal: number }): string {
  return `heap used ${fmt(stats.heapUsed / MB)} MB of ${fmt(stats.heapTotal / MB)} MB (young generation ${fmt(stats.youngTotal / MB)} MB)`;
}

interface Measured {
  loopMaxMs: number;
  p99Ms: number;
  seconds: number;
  /** The server's highest RSS seen while the attack ran (sampled every 100 ms). */
  peakRss: number;
}

/** Samples the server's RSS until `stop` is called, which resolves with the highest seen. */
function watchRss(server: ServerProcess): () => Promise<number> {
  let peak = 0;
  let sampling = Promise.resolve();
  const sample = (): void => {
    sampling = server.rss().then(
      (rss) => {
        peak = Math.max(peak, rss);
      },
      () => undefined,
    );
  };
  sample();
  const timer = setInterval(sample, 100);
  return async () => {
    clearInterval(timer);
    await sampling;
    sample();
    await sampling;
    return peak;
  };
}

/**
 * Runs `attack` (from this process) while the bystander pings from its own: building a
 * large attack blocks the attacker's event loop, which must not count as the server's delay.
 */
async function measure(server: ServerProcess, bystander: IpcChild, attack: Attack | undefined, idleMs = 1000): Promise<Measured> {
  await bystander.ask("start", { url: server.url });
  await server.stats(); // resets the child's loop-delay histogram
  const stopWatch = watchRss(server);
  const started = performance.now();
  if (attack) await attack(server.url);
  else await sleep(idleMs);
  const seconds = (performance.now() - started) / 1000;
  const peakRss = await stopWatch();
  const stats = await server.stats();
  const report = await bystander.ask<BystanderReport>("stop");
  return { loopMaxMs: stats.loopDelayMaxMs, p99Ms: report.p99Ms, seconds, peakRss };
}

const rowsOf = (name: string, m: Measured): Row[] => [
  {
    metric: `${name}: longest loop block`,
    target: `< ${TARGET_MS} ms`,
    measured: ms(m.loopMaxMs),
    ok: m.loopMaxMs < TARGET_MS,
    note: `${fmt(m.seconds, 1)} s`,
  },
  { metric: `${name}: bystander p99 ping`, target: `< ${TARGET_MS} ms`, measured: ms(m.p99Ms), ok: m.p99Ms < TARGET_MS },
  { metric: `${name}: peak RSS`, target: `< ${fmt(MAX_RSS / MB)} MB`, measured: `${fmt(m.peakRss / MB)} MB`, ok: m.peakRss < MAX_RSS },
];

/**
 * Waits, the server idle, until its RSS is back within IDLE_RSS_FACTOR of `baseline`, for at
 * most IDLE_WAIT_MS: what the attacks left behind once nothing runs. Nothing forces a
 * collection: V8 returns freed pages on its own, as it would for an operator.
 */
async function rssOnceIdle(server: ServerProcess, baseline: number): Promise<Row> {
  const started = performance.now();
  let rss = await server.rss();
  progress(`abuse: RSS ${fmt(rss / MB)} MB; waiting (up to ${IDLE_WAIT_MS / 1000} s) for it to come back`);
  while (rss > baseline * IDLE_RSS_FACTOR && performance.now() - started < IDLE_WAIT_MS) {
    await sleep(2000);
    rss = await server.rss();
  }
  return {
    metric: `RSS after every attack, server idle (at most ${IDLE_WAIT_MS / 1000} s)`,
    target: `within ${Math.round((IDLE_RSS_FACTOR - 1) * 100)} % of the baseline`,
    measured: `${fmt(rss / MB)} MB`,
    ok: rss <= baseline * IDLE_RSS_FACTOR,
    note: `after ${fmt((performance.now() - started) / 1000)} s idle; baseline ${fmt(baseline / MB)} MB; ${heapNote(await server.stats())}`,
  };
}

const startAttackedServer = (options: BenchOptions): Promise<ServerProcess> =>
  startServerProcess(
    {
      kind: "roz",
      env: {
        ROZ_MAX_MESSAGE_BYTES: "8MiB",
        ROZ_HANDSHAKE_TIMEOUT_MS: "1000",
        ROZ_HEADERS_TIMEOUT_MS: "1000",
        ROZ_START_TIMEOUT_MS: "1000",
        ROZ_MAX_STREAMS_PER_KEY: "100",
      },
    },
    { profile: options.profile },
  );

export async function runAbuse(options: BenchOptions): Promise<Row[]> {
  const server = await startAttackedServer(options);
  const rows: Row[] = [];
  const attempts = pick(options, 20_000, 4_000);
  const bystander = await forkChild(loadChild, { ROZ_BENCH_ROLE: "bystander" });
  try {
    // Warm-up (JIT, first session, first environment), not measured.
    await measure(server, bystander, globAttack);
    const baseline = await measure(server, bystander, undefined);
    rows.push({ metric: "baseline (no attack): bystander p99 ping", measured: ms(baseline.p99Ms), note: `loop max ${ms(baseline.loopMaxMs)}` });
    const baselineRss = await server.rss();
    rows.push({
      metric: "baseline RSS after warm-up",
      measured: `${fmt(baselineRss / MB)} MB`,
      note: heapNote(await server.stats()),
    });
    const attacks: [string, Attack][] = [
      ["1 globs (extglob refused, worst valid pattern, 64-char tool)", globAttack],
      ["2 tokenizer: 100 KB word (message + tool result)", longWordAttack(100_000)],
      ["2 tokenizer: 4 MB word (message + tool result)", longWordAttack(4_000_000)],
      ["3 register_tools: 3 x 40,000 tools", registerToolsAttack(3)],
      ["3 register_tools: 350,000 minimal tools (4 MiB)", registerToolsAttack(1, 350_000, true)],
      ["3 SendToSession: register_tools of 350,000 minimal tools (4 MiB)", sendToSessionToolsAttack()],
      ["3 SendToSession, gzip: 350,000 minimal tools", sendToSessionToolsAttack("grpc-gzip")],
      ["3 SendToSession, Connect JSON: 200,000 minimal tools", sendToSessionToolsAttack("connect-json", 200_000)],
      ["5 slow sockets: 4 kinds x 200", slowSocketsAttack(200)],
      [`6 streams without start: ${fmt(attempts)}`, noStartAttack(attempts)],
      ["7 oversized messages: 20 x 1 MiB, never half-closed", oversizedAttack(20)],
      ["11 deep JSON: 20 bodies 100,000 levels deep", deepJsonAttack(20)],
      ["11 deep JSON over Connect: 5 SendToSession bodies 2,000,000 levels deep (4 MB)", deepRpcJsonAttack(5)],
    ];
    const streams = pick(options, 126_000, 30_000);
    attacks.push([`8 rapid reset: ${fmt(streams)} streams opened and cancelled`, rapidResetAttack(streams)]);
    for (const [name, attack] of attacks) {
      progress(`abuse: ${name}`);
      rows.push(...rowsOf(name, await measure(server, bystander, attack)));
    }
    if (!options.quick) rows.push(await rssOnceIdle(server, baselineRss));
  } finally {
    await bystander.close();
    await server.close();
  }
  return rows;
}
