// A reconnect storm (session-behaviour.md §6): 200 sessions, each client dropping its stream
// and re-attaching from the last seq it saw 5 times mid-turn. Each ends with exactly the
// responses a never-disconnected client of the same session saw, and nothing is left behind.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { startServer, type TestServer } from "../support/server.ts";
import { type SessionClient, type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { caseOf, readTurn, rq, show, responseValue } from "../support/session-protocol.ts";
import { type TimerTracker, trackTimers } from "../support/timer-tracker.ts";

const SESSIONS = Number(process.env["STORM_SESSIONS"] ?? 200);
const DROPS = 5;
/** A turn of 12 text deltas, each after a short pause, so that drops land mid-turn. */
const TURN = `script: ${JSON.stringify({ responses: [Array.from({ length: 12 }, (_, i) => [{ delay_ms: 10 }, { text: `t${i} ` }]).flat()] })}`;

const kept = (responses: readonly SessionResponse[]) => responses.filter((r) => r.seq > 0n && caseOf(r) !== "keepalive" && caseOf(r) !== "pong");

let server: TestServer;
let tracker: TimerTracker;
const factories: SessionClientFactory[] = [];
beforeAll(async () => {
  tracker = trackTimers();
  server = await startServer({ ROZ_KEEPALIVE_INTERVAL_MS: "3600000", ROZ_DETACH_GRACE_MS: "60000" });
});
afterAll(async () => {
  tracker?.stop();
  for (const f of factories) f.close();
  await server?.close();
});

/** A client that drops its stream `DROPS` times during its turn, re-attaching from its last seq each time. */
async function stormyClient(factory: SessionClientFactory): Promise<{ got: SessionResponse[]; observer: SessionResponse[] }> {
  let client: SessionClient = factory.open();
  // 200 starts at once on a shared machine: give them time (the point here is the drops).
  client.send(rq.start());
  const started = await client.responses.nextMatching((r) => caseOf(r) === "sessionStarted", 60_000);
  const { sessionId } = responseValue(started, "sessionStarted");
  // The never-disconnected client of the same session.
  const observer = factory.open();
  observer.send({ request: { case: "resume", value: { sessionId, afterSeq: 0n } } });
  await observer.responses.nextMatching((r) => caseOf(r) === "sessionStarted", 60_000);

  const got: SessionResponse[] = [];
  let last = 0n;
  const take = (r: SessionResponse): void => {
    // Re-sent open requests repeat an older seq; everything else is new.
    if (r.seq > last) {
      got.push(r);
      last = r.seq;
    }
  };
  for (const r of client.responses.seen) take(r);
  client.send(rq.user(TURN));
  let done = false;
  for (let drop = 0; drop < DROPS && !done; drop++) {
    // Read two responses of the turn, then vanish without a half-close.
    for (let i = 0; i < 2 && !done; i++) {
      const r = await client.next(20_000);
      take(r);
      done = caseOf(r) === "turnComplete";
    }
    client.cancel();
    await client.status;
    client = factory.open();
    client.send({ request: { case: "resume", value: { sessionId, afterSeq: last } } });
  }
  if (!done) for (const r of await readTurn(client, 30_000)) take(r);
  await readTurn(observer, 30_000);
  client.end();
  observer.end();
  await Promise.all([client.status, observer.status]);
  return { got, observer: kept(observer.responses.seen) };
}

it(`${SESSIONS} sessions × ${DROPS} drops mid-turn: every client gets exactly what a never-disconnected one saw; nothing leaks`, async () => {
  const mark = tracker.mark();
  // A few connections, many streams each (as a real fleet of clients would look from here).
  for (let i = 0; i < SESSIONS / 10; i++) factories.push(sessionClientFactory(i % 2 === 0 ? "grpc-js" : "connect", server.url));
  const results = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => stormyClient(factories[i % factories.length]!)));
  for (const { got, observer } of results) {
    expect(kept(got).map(show)).toEqual(observer.map(show));
    expect(caseOf(observer.at(-1)!)).toBe("turnComplete");
  }
  // Every session completed with its last stream's half-close: no live session, no timer of ours left.
  await expect.poll(() => server.app.registry.size, { timeout: 20_000 }).toBe(0);
  await expect.poll(() => tracker.liveSince(mark, "/src/"), { timeout: 10_000 }).toEqual([]);
}, 240_000);
