/**
 * Section "soak": many sessions on one node (SQLite, the bench server settings: rate limits
 * off) doing turns with one client tool call each, closed loop, for minutes, so that each
 * session's history grows. Per minute: turns/s, turn latency p50/p99, the server's RSS and
 * heap. At the end: whether the last minute's turns are as fast as the first's, how much
 * the server grew beyond its sessions' histories, and whether its memory comes back down
 * once every session has ended (no forced GC: what an operator would see).
 */
import { type AgentClient, type BenchStream, benchTool, connectClients, expect, finish, startSession, toolResult, userMessage } from "./client.ts";
import { summarizeProfile } from "./profile.ts";
import { type ServerProcess, startServerProcess } from "./server-process.ts";
import { type BenchOptions, fmt, mapLimit, now, pick, progress, type Row, ratio, sleep, summarize } from "./support.ts";

const MINUTE_MS = 60_000;
/** How long the server idles after every session ended before its memory is read again. */
const AFTER_END_MS = 120_000;
/** RSS is watched (every `RSS_POLL_MS`, a divisor of AFTER_END_MS) up to this long, to say when it came back. */
const WATCH_END_MS = 180_000;
const RSS_POLL_MS = 5000;
const P50_RATIO_TARGET = 1.2;
const GROWTH_TARGET_KB = 100;
const AFTER_END_TARGET = 0.25;

/** What one turn asks of the scripted model: one call of the client's tool, then a short answer. */
const TURN_SCRIPT = `script: ${JSON.stringify({
  responses: [[{ tool_call: { name: benchTool.name, arguments: { n: 1 } } }], [{ text: "done" }]],
  usage: { input_tokens: 100, output_tokens: 10 },
})}`;

/** One minute of the run: turns completed in it and the server's memory at its end. */
interface Minute extends Memory {
  latencies: number[];
  errors: number;
  seconds: number;
}

const newMinute = (): Minute => ({ latencies: [], errors: 0, seconds: 0, rss: 0, heap: 0, heapTotal: 0, external: 0 });
const mb = (bytes: number): string => `${fmt(bytes / 2 ** 20)} MB`;

/** One session's closed loop until `deadline`: a failed turn is counted and the session replaced. Resolves with its stream. */
async function soakSession(client: AgentClient, deadline: number, minute: () => Minute): Promise<BenchStream> {
  let stream = (await startSession(client, { tools: [benchTool] })).stream;
  for (let turn = 0; now() < deadline; turn++) {
    const sent = now();
    try {
      stream.send(userMessage(TURN_SCRIPT));
      const request = await expect(stream, "toolRequest");
      stream.send(toolResult(request.toolCallId, `result of turn ${turn}`));
      const done = await expect(stream, "turnComplete");
      if (done.stopReason !== "end_turn") throw new Error(`turn ended with ${done.stopReason}`);
      // Turns that end after the deadline belong to no minute.
      if (now() < deadline) minute().latencies.push(now() - sent);
    } catch {
      minute().errors++;
      stream.abort();
      stream = (await startSession(client, { tools: [benchTool] })).stream;
    }
  }
  return stream;
}

/** The server's memory: RSS from /proc; from the child, its JS heap (used, and what V8 holds for it) and external memory (array buffers and other native memory V8 knows of). */
interface Memory {
  rss: number;
  heap: number;
  heapTotal: number;
  external: number;
}

async function memory(server: ServerProcess): Promise<Memory> {
  const stats = await server.stats();
  return { rss: await server.rss(), heap: stats.heapUsed, heapTotal: stats.heapTotal, external: stats.external };
}

/** RSS and the heap's figures, as the rows print them. */
const memoryNote = (m: Memory): string => `RSS ${mb(m.rss)}, heap ${mb(m.heap)} of ${mb(m.heapTotal)} held, external ${mb(m.external)}`;

/** Runs the section and returns its table rows. */
export async function runSoak(options: BenchOptions): Promise<Row[]> {
  const sessions = pick(options, 1000, 200);
  const durationMs = pick(options, 10 * MINUTE_MS, 2 * MINUTE_MS);
  const connections = Math.max(1, Math.min(100, Math.ceil(sessions / 10)));
  const server = await startServerProcess({ kind: "roz" }, { profile: options.profile });
  const conn = connectClients(server.url, connections);
  const clientOf = (i: number) => conn.clients[i % connections] as AgentClient;
  const minutes: Minute[] = [];
  let current = newMinute();
  try {
    // Warm-up: every path of a turn runs, then those sessions end again.
    const warm = await mapLimit(20, 20, (i) => soakSession(clientOf(i), now() + 3000, () => newMinute()));
    await Promise.all(warm.map((stream) => finish(stream)));
    await sleep(5000);
    const baseline = await memory(server);
    progress(`soak: baseline ${memoryNote(baseline)}; ${sessions} sessions for ${durationMs / MINUTE_MS} min`);

    const started = now();
    const deadline = started + durationMs;
    let minuteStart = started;
    const closeMinute = async (): Promise<void> => {
      const done = current;
      current = newMinute();
      const at = now();
      done.seconds = (at - minuteStart) / 1000;
      minuteStart = at;
      Object.assign(done, await memory(server));
      minutes.push(done);
      const s = summarize(done.latencies);
      progress(
        `soak: minute ${minutes.length}: ${fmt(done.latencies.length / done.seconds)} turns/s, p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms, ` +
          `${memoryNote(done)}, ${done.errors} errors`,
      );
    };
    const sampler = async (): Promise<void> => {
      for (let m = 1; m * MINUTE_MS <= durationMs; m++) {
        await sleep(started + m * MINUTE_MS - now());
        await closeMinute();
      }
    };
    const [streams] = await Promise.all([
      Promise.all(Array.from({ length: sessions }, (_, i) => soakSession(clientOf(i), deadline, () => current))),
      sampler(),
    ]);
    const loaded = await memory(server);
    const historyBytes = await server.histories();

    await mapLimit(streams.length, 200, (i) => finish(streams[i] as BenchStream));
    while ((await server.stats()).sessions > 0) await sleep(500);
    progress(`soak: every session ended; idling ${AFTER_END_MS / 1000} s (RSS watched for up to ${WATCH_END_MS / 1000} s)`);
    const { after, backAfterMs } = await watchAfterEnd(server, baseline.rss);
    return soakRows({ sessions, durationMs, minutes, baseline, loaded, after, historyBytes, backAfterMs });
  } finally {
    conn.close();
    const profile = await server.close();
    if (profile) summarizeProfile(profile, "soak: our server");
  }
}

/**
 * Idles the server after its sessions ended: its memory at AFTER_END_MS, and when RSS first
 * came back within the target of `baselineRss` (undefined: not within WATCH_END_MS).
 */
async function watchAfterEnd(server: ServerProcess, baselineRss: number): Promise<{ after: Memory; backAfterMs: number | undefined }> {
  const ended = now();
  let backAfterMs: number | undefined;
  let after: Memory | undefined;
  // Polls on a fixed schedule from the end (AFTER_END_MS is one of its ticks).
  for (let elapsed = RSS_POLL_MS; elapsed <= WATCH_END_MS && (after === undefined || backAfterMs === undefined); elapsed += RSS_POLL_MS) {
    await sleep(ended + elapsed - now());
    if (backAfterMs === undefined && (await server.rss()) <= baselineRss * (1 + AFTER_END_TARGET)) backAfterMs = elapsed;
    if (elapsed === AFTER_END_MS) after = await memory(server);
  }
  return { after: after ?? (await memory(server)), backAfterMs };
}

interface SoakFigures {
  sessions: number;
  durationMs: number;
  minutes: Minute[];
  baseline: Memory;
  loaded: Memory;
  after: Memory;
  historyBytes: number;
  backAfterMs: number | undefined;
}

function soakRows(f: SoakFigures): Row[] {
  const rows: Row[] = f.minutes.map((m, i) => {
    const s = summarize(m.latencies);
    const rate = m.latencies.length / m.seconds;
    return {
      metric: `minute ${i + 1}`,
      measured: `${fmt(rate)} turns/s`,
      value: rate,
      note: `p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms, ${memoryNote(m)}${m.errors > 0 ? `, ${m.errors} errors` : ""}`,
    };
  });
  const first = f.minutes[0];
  const last = f.minutes.at(-1);
  if (first && last && first !== last) {
    const p50 = summarize(last.latencies).p50 / summarize(first.latencies).p50;
    const throughput = last.latencies.length / last.seconds / (first.latencies.length / first.seconds);
    rows.push({
      metric: "turn p50, last minute / first",
      target: `<= ${P50_RATIO_TARGET} (same throughput)`,
      measured: ratio(p50),
      ok: p50 <= P50_RATIO_TARGET,
      note: `throughput last / first ${ratio(throughput)}`,
    });
  }
  const turns = f.minutes.reduce((n, m) => n + m.latencies.length, 0);
  const errors = f.minutes.reduce((n, m) => n + m.errors, 0);
  rows.push({ metric: "turns, errors", measured: `${fmt(turns)}, ${fmt(errors)}`, value: errors, note: `${fmt(turns / f.sessions)} turns per session` });
  const sessionHours = (f.sessions * f.durationMs) / 3_600_000;
  const beyond = (f.loaded.rss - f.baseline.rss - f.historyBytes) / sessionHours / 1024;
  rows.push({
    metric: "RSS growth per session-hour beyond the histories",
    target: `<= ${GROWTH_TARGET_KB} KB`,
    measured: `${fmt(beyond)} KB`,
    ok: beyond <= GROWTH_TARGET_KB,
    note: `RSS ${mb(f.baseline.rss)} -> ${mb(f.loaded.rss)}, histories ${mb(f.historyBytes)} (JSON), ${fmt(sessionHours, 1)} session-hours`,
  });
  const back = f.after.rss / f.baseline.rss - 1;
  rows.push({
    metric: `RSS ${AFTER_END_MS / 1000} s after every session ended, vs baseline`,
    target: `within ${AFTER_END_TARGET * 100} %`,
    measured: `${back >= 0 ? "+" : ""}${fmt(back * 100)} %`,
    ok: back <= AFTER_END_TARGET,
    note: `after: ${memoryNote(f.after)}; baseline: ${memoryNote(f.baseline)}; at the end of the load: heap ${mb(f.loaded.heap)} of ${mb(f.loaded.heapTotal)}`,
  });
  rows.push({
    metric: `RSS back within ${AFTER_END_TARGET * 100} % of baseline, after`,
    measured: f.backAfterMs === undefined ? `> ${WATCH_END_MS / 1000} s` : `${fmt(f.backAfterMs / 1000)} s`,
    note: `after every session ended, RSS read every ${RSS_POLL_MS / 1000} s (V8 gives its freed pages back on its own schedule)`,
  });
  return rows;
}
