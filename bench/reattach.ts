/**
 * Section "reattach": a session with a backlog of 1,000 kept responses (in-band errors, the
 * cheapest kept response to produce), then repeated re-attaches with `resume{after_seq: 0}`:
 * the time to the first replayed response and to live (a ping sent right behind the resume is
 * answered only after the whole backlog), p50/p99. Then replay throughput (responses/s)
 * against the same responses streamed live by a fresh session of the same server.
 */
import { type AgentClient, type BenchStream, connectClients, finish, openStream, type SessionRequestInit, startSession } from "./client.ts";
import { startServerProcess } from "./server-process.ts";
import { fmt, ms, now, perSecond, pick, ratio, type Row, summarize, type BenchOptions } from "./support.ts";

const BACKLOG = 1_000;
const P99_TARGET_MS = 50;

const noTurnResult = (i: number): SessionRequestInit => ({ request: { case: "toolResult", value: { toolCallId: `x${i}`, success: true, result: "" } } });
const resume = (sessionId: string): SessionRequestInit => ({ request: { case: "resume", value: { sessionId, afterSeq: 0n } } });
const ping: SessionRequestInit = { request: { case: "ping", value: {} } };

/** Reads until a response with seq ≥ `seq` arrived; returns the number read. */
async function readThrough(stream: BenchStream, seq: number): Promise<number> {
  let n = 0;
  for (;;) {
    const r = await stream.next();
    if (r === undefined) throw new Error(`stream ended before seq ${seq}`);
    n++;
    if (Number(r.seq) >= seq) return n;
  }
}

/** A fresh session that streams `BACKLOG` kept responses live; returns it with the live rate. */
async function liveBacklog(client: AgentClient): Promise<{ sessionId: string; stream: BenchStream; perSecond: number }> {
  const { stream, sessionId } = await startSession(client);
  const t0 = now();
  for (let i = 0; i < BACKLOG; i++) stream.send(noTurnResult(i));
  await readThrough(stream, BACKLOG + 1);
  return { sessionId, stream, perSecond: BACKLOG / ((now() - t0) / 1000) };
}

export async function runReattach(options: BenchOptions): Promise<Row[]> {
  const attaches = pick(options, 100, 30);
  // Each re-attach here ends its stream with a reset, far more than a client would per second:
  // the rapid-reset guard is for attackers, not for this measurement.
  const server = await startServerProcess({ kind: "roz", env: { ROZ_HTTP2_MAX_RESETS_PER_SECOND: "0" } }, { profile: options.profile });
  const conn = connectClients(server.url, 2);
  try {
    const client = conn.clients[0] as AgentClient;
    // Warm-up: one backlog and a few re-attaches, so the JIT is warm on both paths.
    const warm = await liveBacklog(client);
    for (let i = 0; i < 5; i++) {
      const s = openStream(client);
      s.send(resume(warm.sessionId));
      await readThrough(s, BACKLOG + 1);
      s.abort();
    }
    await finish(warm.stream);

    const live = await liveBacklog(client);
    const first: number[] = [];
    const toLive: number[] = [];
    const replayRates: number[] = [];
    for (let i = 0; i < attaches; i++) {
      const s = openStream(conn.clients[1] as AgentClient);
      const t0 = now();
      s.send(resume(live.sessionId));
      s.send(ping);
      const r = await s.next();
      if (r === undefined || Number(r.seq) !== 1) throw new Error("the replay did not start with seq 1");
      const t1 = now();
      first.push(t1 - t0);
      for (;;) {
        const next = await s.next();
        if (next === undefined) throw new Error("stream ended during the replay");
        if (next.response.case === "pong") break;
      }
      const t2 = now();
      toLive.push(t2 - t0);
      replayRates.push(BACKLOG / ((t2 - t1) / 1000));
      s.abort();
    }
    await finish(live.stream);
    // Baseline: opening a stream at all (a ping on a new stream, no session).
    const open: number[] = [];
    for (let i = 0; i < attaches; i++) {
      const s = openStream(conn.clients[1] as AgentClient);
      const t0 = now();
      s.send(ping);
      await s.next();
      open.push(now() - t0);
      s.abort();
    }
    const o = summarize(open);
    const f = summarize(first);
    const l = summarize(toLive);
    const replay = summarize(replayRates).p50;
    return [
      { metric: "baseline: new stream → pong, p50 / p99", measured: `${ms(o.p50)} / ${ms(o.p99)}` },
      { metric: `re-attach → first replayed response, p50 (${BACKLOG}-response backlog)`, measured: ms(f.p50) },
      { metric: "re-attach → first replayed response, p99", target: `< ${P99_TARGET_MS} ms`, measured: ms(f.p99), ok: f.p99 < P99_TARGET_MS },
      { metric: "re-attach → live (whole backlog replayed), p50", measured: ms(l.p50) },
      { metric: "re-attach → live, p99", target: `< ${P99_TARGET_MS} ms`, measured: ms(l.p99), ok: l.p99 < P99_TARGET_MS, note: `${attaches} re-attaches` },
      { metric: "replay throughput (p50 of re-attaches)", measured: perSecond(replay) },
      { metric: "live throughput, a fresh session streaming the same responses", measured: perSecond(live.perSecond) },
      { metric: "replay / live", target: "≥ 1", measured: ratio(replay / live.perSecond), ok: replay >= live.perSecond, note: `${fmt(BACKLOG)} responses` },
    ];
  } finally {
    conn.close();
    await server.close();
  }
}
