/**
 * Section "persistence": (a) turns stored per second by `Store.appendTurn`
 * directly, SQLite and PostgreSQL, one writer and eight; (b) a session's turn latency
 * through our server (scripted model) with each store against `MemoryPersistence`, all
 * servers running side by side and measured in alternating blocks so noise hits all alike.
 */
import { findPostgres, type TestPostgres } from "../test/support/postgres.ts";
import { type Store, openStore } from "../src/store/index.ts";
import { type AgentClient, type BenchStream, connectClients, expect, finish, startSession, userMessage } from "./client.ts";
import { startServerProcess, type ServerProcess } from "./server-process.ts";
import { type BenchOptions, countFor, fmt, ms, now, perSecond, pick, progress, type Row, summarize, tempDir } from "./support.ts";
import { realisticTurn } from "./turn-record.ts";
import { summarizeProfile } from "./profile.ts";

const ADDED_P99_TARGET_MS = 2;
const WRITERS = 8;

/** PostgreSQL from the environment or a throwaway cluster; the reason when there is none. */
export async function postgres(): Promise<{ pg: TestPostgres } | { reason: string }> {
  try {
    const found = await findPostgres();
    return found.pg ? { pg: found.pg } : { reason: found.reason };
  } catch (err) {
    return { reason: err instanceof Error ? (err.message.split("\n")[0] as string) : String(err) };
  }
}

/** Turns/s with one writer, then with WRITERS writers on as many sessions. */
async function appendRate(store: Store, durationMs: number): Promise<{ single: number; multi: number }> {
  const tenant = await store.ensureTenant("bench");
  const env = await store.getDefaultEnvironment(tenant.id);
  const sessions = await Promise.all(
    Array.from({ length: WRITERS }, () => store.createSession(tenant.id, { environmentId: env.id, model: "scripted/default" })),
  );
  const append = (sessionId: string) => async () => {
    if ((await store.appendTurn(tenant.id, sessionId, realisticTurn())) === undefined) throw new Error("session vanished");
  };
  const first = (sessions[0] as (typeof sessions)[number]).id;
  await countFor(Math.min(300, durationMs / 4), append(first)); // warm-up
  let started = now();
  const single = (await countFor(durationMs, append(first))) / ((now() - started) / 1000);
  started = now();
  const counts = await Promise.all(sessions.map((s) => countFor(durationMs, append(s.id))));
  const multi = counts.reduce((a, b) => a + b, 0) / ((now() - started) / 1000);
  return { single, multi };
}

interface Contender {
  name: string;
  server: ServerProcess;
  stream?: BenchStream;
  samples: number[];
  turns: number;
}

async function turnLatency(c: Contender, client: AgentClient, turns: number, record: boolean): Promise<void> {
  // A fresh session now and then keeps the history (and the prompt) from growing without bound.
  if (!c.stream || c.turns % 100 === 0) {
    if (c.stream) await finish(c.stream);
    c.stream = (await startSession(client)).stream;
  }
  for (let i = 0; i < turns; i++, c.turns++) {
    const sent = now();
    c.stream.send(userMessage(`turn ${c.turns}: hello`));
    const done = await expect(c.stream, "turnComplete");
    if (record) c.samples.push(now() - sent);
    if (done.stopReason !== "end_turn") throw new Error(`${c.name}: turn ended with ${done.stopReason}`);
  }
}

/** Runs the section and returns its table rows. */
export async function runPersistence(options: BenchOptions): Promise<Row[]> {
  const rows: Row[] = [];
  const durationMs = pick(options, 2000, 500);
  const found = await postgres();
  const pg = "pg" in found ? found.pg : undefined;
  const pgNote = pg?.source === "throwaway" ? "throwaway cluster (fsync=off)" : "DATABASE_URL server";
  const data = await tempDir("roz-bench-store-");
  try {
    // (a) Store.appendTurn directly.
    const stores: { name: string; note: string; open: () => Promise<Store> }[] = [
      { name: "sqlite", note: "synchronous=NORMAL (the server's default), WAL", open: () => openStore({ dataDir: data.path, sqliteSynchronous: "NORMAL" }) },
      ...(pg ? [{ name: "postgres", note: pgNote, open: async () => openStore({ dataDir: data.path, databaseUrl: await pg.createDatabase() }) }] : []),
    ];
    for (const s of stores) {
      progress(`persistence: appendTurn on ${s.name}, ${durationMs} ms x 2`);
      const store = await s.open();
      try {
        const rate = await appendRate(store, durationMs);
        rows.push(
          { metric: `appendTurn/s, ${s.name}, 1 writer`, measured: perSecond(rate.single), note: s.note },
          { metric: `appendTurn/s, ${s.name}, ${WRITERS} writers`, measured: perSecond(rate.multi) },
        );
      } finally {
        await store.close();
      }
    }
    if (!pg)
      rows.push({ metric: "appendTurn/s, postgres", measured: "skipped", note: `postgres: skipped (no server): ${"reason" in found ? found.reason : ""}` });

    // (b) Turn latency through the server, store vs memory.
    const turns = pick(options, 300, 60);
    const block = 20;
    progress(`persistence: turn latency, ${turns} turns per server (memory, sqlite${pg ? ", postgres" : ""}) in blocks of ${block}`);
    const specs = [
      { name: "memory", spec: { kind: "roz" as const, persistence: "memory" as const } },
      { name: "sqlite", spec: { kind: "roz" as const } },
      ...(pg ? [{ name: "postgres", spec: { kind: "roz" as const, env: { DATABASE_URL: await pg.createDatabase() } } }] : []),
    ];
    const contenders: Contender[] = [];
    for (const s of specs) contenders.push({ name: s.name, server: await startServerProcess(s.spec, { profile: options.profile }), samples: [], turns: 0 });
    const conns = contenders.map((c) => connectClients(c.server.url, 1));
    try {
      for (const [i, c] of contenders.entries()) await turnLatency(c, conns[i]?.clients[0] as AgentClient, block, false); // warm-up
      for (let done = 0; done < turns; done += block) {
        for (const [i, c] of contenders.entries()) await turnLatency(c, conns[i]?.clients[0] as AgentClient, block, true);
      }
      for (const c of contenders) if (c.stream) await finish(c.stream);
    } finally {
      for (const c of conns) c.close();
      for (const c of contenders) {
        const profile = await c.server.close();
        if (profile) summarizeProfile(profile, `persistence: our server with ${c.name}`);
      }
    }
    const memory = summarize((contenders[0] as Contender).samples);
    rows.push({ metric: "turn latency p50/p99, memory", measured: `${ms(memory.p50)} / ${ms(memory.p99)}`, note: `${memory.n} turns, scripted model` });
    for (const c of contenders.slice(1)) {
      const s = summarize(c.samples);
      const added = s.p99 - memory.p99;
      rows.push(
        {
          metric: `turn latency p50/p99, ${c.name}`,
          measured: `${ms(s.p50)} / ${ms(s.p99)}`,
          note: c.name === "postgres" ? pgNote : "ROZ_SQLITE_SYNCHRONOUS=normal (default)",
        },
        {
          metric: `added at p99, ${c.name} vs memory`,
          target: `< ${ADDED_P99_TARGET_MS} ms`,
          measured: ms(added),
          ok: added < ADDED_P99_TARGET_MS,
          note: `p50 +${fmt(s.p50 - memory.p50, 2)} ms`,
        },
      );
    }
    if (!pg) rows.push({ metric: "turn latency, postgres", measured: "skipped", note: "postgres: skipped (no server)" });
  } finally {
    await pg?.stop();
    await data.remove();
  }
  return rows;
}
