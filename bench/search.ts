/**
 * Section "search": (a) `GET /v1/sessions?q=` as the store answers it — full-text search over
 * 100,000 stored turns of one tenant, SQLite (FTS5) and PostgreSQL (tsvector + GIN), p99 per
 * query; (b) a retention sweep deleting 10,000 ended sessions (with a turn and events each),
 * measuring the longest time the event loop was held meanwhile.
 */
import { randomUUID } from "node:crypto";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { sweepEndedSessions } from "../src/app/session-retention.ts";
import { openStore, type Store } from "../src/store/index.ts";
import type { TestPostgres } from "../test/support/postgres.ts";
import { postgres } from "./persistence.ts";
import { type BenchOptions, fmt, mapLimit, ms, now, pick, progress, type Row, sleep, summarize, tempDir } from "./support.ts";
import type { TurnRecord } from "../src/domain/index.ts";

const SEARCH_P99_TARGET_MS = 50;
const LOOP_BLOCK_TARGET_MS = 50;
const VOCABULARY = 20_000;
const WORDS_PER_TURN = 60;
const TURNS_PER_SESSION = 50;
const WRITERS = 8;
const DAY_MS = 24 * 60 * 60_000;

/** Pseudo-words, each in about `turns * WORDS_PER_TURN / VOCABULARY` turns. */
const vocabulary = Array.from({ length: VOCABULARY }, (_, i) => `w${i.toString(36)}x${(i * 7919).toString(36)}`);
const randomWord = () => vocabulary[Math.floor(Math.random() * VOCABULARY)] as string;
const sentence = (n: number) => Array.from({ length: n }, randomWord).join(" ");

/** A turn of plain chat: `words` random words from the user and as many from the assistant. */
function chatTurn(words: number): TurnRecord {
  const at = Date.now();
  return {
    messageId: randomUUID(),
    userContent: sentence(words),
    userContext: [],
    mode: "react",
    assistantText: sentence(words),
    assistantThinking: "",
    assistantThinkingBlocks: [],
    toolCalls: [],
    usage: { inputTokens: 100, outputTokens: 50, cacheReadTokens: 0, cacheCreationTokens: 0 },
    costUsd: 0,
    stopReason: "end_turn",
    compactions: 0,
    startedAt: at - 1000,
    endedAt: at,
  };
}

/** `turns` turns of one tenant, stored by `appendTurn` (which indexes them) from WRITERS writers. */
async function seedTurns(store: Store, turns: number): Promise<string> {
  const tenant = await store.ensureTenant(`search-${randomUUID().slice(0, 8)}`);
  const sessions = Math.ceil(turns / TURNS_PER_SESSION);
  await mapLimit(sessions, WRITERS, async (i) => {
    const session = await store.createSession(tenant.id, { environmentId: "env", model: "scripted/default", title: `session ${i} ${sentence(3)}` });
    for (let t = 0; t < TURNS_PER_SESSION; t++) {
      await store.appendTurn(tenant.id, session.id, chatTurn(WORDS_PER_TURN / 2));
    }
  });
  return tenant.id;
}

/** Latencies (ms) of `queries` searches with `wordsOf()` words each. */
async function searchLatency(store: Store, tenantId: string, queries: number, wordsOf: () => string[]): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < queries; i++) {
    const words = wordsOf();
    const started = now();
    await store.listSessions(tenantId, { words, archived: false, limit: 50 });
    samples.push(now() - started);
  }
  return samples;
}

/** `count` sessions that ended two days ago, each with a turn and two events. */
async function seedEnded(store: Store, count: number): Promise<void> {
  const tenant = await store.ensureTenant(`retention-${randomUUID().slice(0, 8)}`);
  await mapLimit(count, WRITERS, async () => {
    const s = await store.createSession(tenant.id, { environmentId: "env", model: "scripted/default" });
    const events = [1, 2].map((seq) => ({ seq, payload: new Uint8Array(200) }));
    await store.appendTurn(tenant.id, s.id, chatTurn(20), events);
    await store.updateSessionStatus(tenant.id, s.id, { status: "completed", endedAt: Date.now() - 2 * DAY_MS });
  });
}

/** The longest event-loop delay (ms) while `work` runs. */
async function longestDelay<T>(work: () => Promise<T>): Promise<{ result: T; maxMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  const result = await work();
  histogram.disable();
  return { result, maxMs: histogram.max / 1e6 };
}

/**
 * The sweep's duration, the longest event-loop delay seen while it ran, the longest GC pause
 * among them, and — the baseline on a shared machine — the longest delay of an idle loop for
 * as long again.
 */
async function sweepBlocking(store: Store): Promise<{ deleted: number; durationMs: number; maxBlockMs: number; maxGcMs: number; idleMaxMs: number }> {
  // The seeding's own garbage and writes settle first: what is measured is the sweep.
  await sleep(1000);
  let maxGcMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) maxGcMs = Math.max(maxGcMs, entry.duration);
  });
  gc.observe({ entryTypes: ["gc"] });
  const started = now();
  const sweep = await longestDelay(() => sweepEndedSessions(store, `bench-${randomUUID()}`, 1));
  const durationMs = now() - started;
  gc.disconnect();
  const idle = await longestDelay(() => sleep(durationMs));
  return { deleted: sweep.result, durationMs, maxBlockMs: sweep.maxMs, maxGcMs, idleMaxMs: idle.maxMs };
}

async function measure(name: string, store: Store, options: BenchOptions, rows: Row[]): Promise<void> {
  const turns = pick(options, 100_000, 10_000);
  const queries = pick(options, 300, 60);
  progress(`search: storing ${fmt(turns)} turns on ${name}`);
  const seeded = now();
  const tenantId = await seedTurns(store, turns);
  const seedSeconds = (now() - seeded) / 1000;
  const kinds: [string, () => string[]][] = [
    ["one word", () => [randomWord()]],
    ["two words", () => [randomWord(), randomWord()]],
    ["absent word", () => [`nothing${randomUUID().slice(0, 6)}`]],
  ];
  await searchLatency(store, tenantId, 20, () => [randomWord()]); // warm-up
  for (const [kind, wordsOf] of kinds) {
    progress(`search: ${queries} searches (${kind}) on ${name}`);
    const s = summarize(await searchLatency(store, tenantId, queries, wordsOf));
    rows.push({
      metric: `search p50/p99, ${name}, ${kind}`,
      target: `p99 < ${SEARCH_P99_TARGET_MS} ms`,
      measured: `${ms(s.p50)} / ${ms(s.p99)}`,
      ok: s.p99 < SEARCH_P99_TARGET_MS,
      value: s.p99,
      note:
        kind === "one word" ? `${fmt(turns)} turns in ${fmt(turns / TURNS_PER_SESSION)} sessions of one tenant (stored at ${fmt(turns / seedSeconds)}/s)` : "",
    });
  }
  const ended = pick(options, 10_000, 2_000);
  progress(`search: storing ${fmt(ended)} ended sessions on ${name}, then one retention sweep`);
  await seedEnded(store, ended);
  const sweep = await sweepBlocking(store);
  rows.push({
    metric: `retention sweep, ${name}: longest event-loop block`,
    target: `< ${LOOP_BLOCK_TARGET_MS} ms`,
    measured: ms(sweep.maxBlockMs),
    ok: sweep.maxBlockMs < LOOP_BLOCK_TARGET_MS && sweep.deleted === ended,
    value: sweep.maxBlockMs,
    note: `${fmt(sweep.deleted)} sessions deleted in ${ms(sweep.durationMs)}; longest GC pause ${ms(sweep.maxGcMs)}`,
  });
  rows.push({
    metric: `idle event loop, ${name}: longest delay (baseline)`,
    measured: ms(sweep.idleMaxMs),
    value: sweep.idleMaxMs,
    note: "the same process idle for as long as the sweep took: the machine's own scheduling delay",
  });
}

/** Runs the section and returns its table rows. */
export async function runSearch(options: BenchOptions): Promise<Row[]> {
  const rows: Row[] = [];
  const found = await postgres();
  const pg: TestPostgres | undefined = "pg" in found ? found.pg : undefined;
  const data = await tempDir("roz-bench-search-");
  try {
    const stores: [string, () => Promise<Store>][] = [
      ["sqlite", () => openStore({ dataDir: data.path, sqliteSynchronous: "NORMAL" })],
      ...(pg ? [["postgres", async () => openStore({ dataDir: data.path, databaseUrl: await pg.createDatabase() })] as [string, () => Promise<Store>]] : []),
    ];
    for (const [name, open] of stores) {
      const store = await open();
      try {
        await measure(name, store, options, rows);
      } finally {
        await store.close();
      }
    }
    if (!pg) rows.push({ metric: "search, postgres", measured: "skipped", note: `postgres: skipped (no server): ${"reason" in found ? found.reason : ""}` });
  } finally {
    await pg?.stop();
    await data.remove();
  }
  return rows;
}
