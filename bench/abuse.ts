/**
 * Section "abuse": each attack of the resilience report against our server (a child
 * process), next to a bystander session that pings every 10 ms. For each attack: the longest
 * event-loop block of the server meanwhile and the bystander's p99 round trip (targets: both
 * under 50 ms), plus memory after the stream floods. The baseline is the bystander alone. The
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

/** What of the RSS is V8's heap: the part in use, and the part it holds. */
function heapNote(stats: { heapUsed: number; heapTotal: number; youngTotal: number }): string {
  return `heap used ${fmt(stats.heapUsed / MB)} MB of ${fmt(stats.heapTotal / MB)} MB (young generation ${fmt(stats.youngTotal / MB)} MB)`;
}

interface Measured {
  loopMaxMs: number;
  p99Ms: number;
  seconds: number;
}

/**
 * Runs `attack` (from this process) while the bystander pings from its own: building a
 * large attack blocks the attacker's event loop, which must not count as the server's delay.
 */
async function measure(server: ServerProcess, bystander: IpcChild, attack: Attack | undefined, idleMs = 1000): Promise<Measured> {
  await bystander.ask("start", { url: server.url });
  await server.stats(); // resets the child's loop-delay histogram
  const started = performance.now();
  if (attack) await attack(server.url);
  else await sleep(idleMs);
  const seconds = (performance.now() - started) / 1000;
  const stats = await server.stats();
  const report = await bystander.ask<BystanderReport>("stop");
  return { loopMaxMs: stats.loopDelayMaxMs, p99Ms: report.p99Ms, seconds };
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
];

/**
 * V8 keeps the pages a burst's garbage freed (`pooled` in --trace-gc) and returns them at a
 * memory-reducing GC, which it starts only once it sees the allocation rate low, or after
 * some 100 s without a GC: until then they count in the RSS although nothing uses them. This
 * waits, the server idle, until the RSS is back within 20 % of `baseline` (at most 150 s):
 * what the attacks left behind.
 */
async function rssOnceIdle(server: ServerProcess, baseline: number): Promise<Row> {
  const started = performance.now();
  let rss = await server.rss();
  progress(`abuse: RSS ${fmt(rss / MB)} MB; waiting (up to 150 s) for V8 to return the freed pages`);
  while (rss > baseline * 1.2 && performance.now() - started < 150_000) {
    await sleep(2000);
    rss = await server.rss();
  }
  return {
    metric: "6+8 RSS after every attack, once V8 returned the freed pages (server idle)",
    target: "< 300 MB",
    measured: `${fmt(rss / MB)} MB`,
    ok: rss < 300 * MB,
    note: `after ${fmt((performance.now() - started) / 1000)} s idle; baseline ${fmt(baseline / MB)} MB`,
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

/** The row of the server's RSS after `run`, a GC before and after (target < 300 MB). */
async function rssRowAround(server: ServerProcess, metric: string, run: () => Promise<void>): Promise<Row> {
  await server.gc();
  const before = await server.rss();
  await run();
  await server.gc();
  const after = await server.rss();
  return {
    metric,
    target: "< 300 MB",
    measured: `${fmt(after / MB)} MB`,
    ok: after < 300 * MB,
    note: `${fmt(before / MB)} MB before; ${heapNote(await server.stats())}`,
  };
}

/** The streams-without-start flood alone, against a server that saw nothing else. */
async function freshServerRss(options: BenchOptions, attempts: number): Promise<Row> {
  const server = await startAttackedServer(options);
  try {
    await noStartAttack(200)(server.url); // warm-up, as the other server's
    const metric = `6 RSS after ${fmt(attempts)} streams without start, server that saw nothing else (after GC)`;
    return await rssRowAround(server, metric, () => noStartAttack(attempts)(server.url));
  } finally {
    await server.close();
  }
}

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
    await server.gc();
    const baselineRss = await server.rss();
    rows.push({
      metric: "baseline RSS after warm-up and GC",
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
    for (const [name, attack] of attacks) {
      progress(`abuse: ${name}`);
      if (!name.startsWith("6 ")) {
        rows.push(...rowsOf(name, await measure(server, bystander, attack)));
        continue;
      }
      const metric = `6 RSS after ${fmt(attempts)} streams without start, following attacks 1-5 (after GC)`;
      let blockRows: Row[] = [];
      const rssRow = await rssRowAround(server, metric, async () => {
        blockRows = rowsOf(name, await measure(server, bystander, attack));
      });
      rows.push(...blockRows, rssRow);
    }
    // Rapid reset: RSS before, after the attack and after the heap recovered.
    await server.gc();
    const before = await server.rss();
    const streams = pick(options, 126_000, 30_000);
    progress(`abuse: 8 rapid reset, ${fmt(streams)} streams`);
    rows.push(...rowsOf(`8 rapid reset: ${fmt(streams)} streams opened and cancelled`, await measure(server, bystander, rapidResetAttack(streams))));
    await server.gc();
    await sleep(500);
    const after = await server.rss();
    rows.push({
      metric: "8 rapid reset: RSS after GC vs before",
      target: "within 20 %",
      measured: `${fmt(before / MB)} -> ${fmt(after / MB)} MB`,
      ok: after <= before * 1.2,
    });
    if (!options.quick) rows.push(await rssOnceIdle(server, baselineRss));
  } finally {
    await bystander.close();
    await server.close();
  }
  progress(`abuse: 6 streams without start, ${fmt(attempts)}, against a server that saw nothing else`);
  rows.push(await freshServerRss(options, attempts));
  return rows;
}
