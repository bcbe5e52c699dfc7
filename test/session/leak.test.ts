// A client that disappears mid-turn (grpc-js call.cancel(), no half-close) leaves nothing
// running once the detach grace is over: no session, no provider request, no timers.
import { runInNewContext } from "node:vm";
import { setFlagsFromString } from "node:v8";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { nextOf, readTurn, rq, tool, turnCompleteOf } from "../support/session-protocol.ts";
import { activeTimerCount, type TimerTracker, trackTimers } from "../support/timer-tracker.ts";
import { GRPC, type SessionFixture, startSessionFixture } from "./fixture.ts";

let fx: SessionFixture;
let tracker: TimerTracker;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The idle timer count of the process (server, fake and clients all live here). The
 * smallest of a few samples over 300 ms, so that short-lived timers of the test runner
 * itself (it throttles its reports with one) do not inflate it.
 */
async function idleTimerCount(): Promise<number> {
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 6; i++) {
    await sleep(60);
    least = Math.min(least, activeTimerCount());
  }
  return least;
}

/**
 * What a test measures before it acts: the idle count and a tracker mark. `expectNoLeak`
 * then waits (plain sleeps: expect.poll's own timers would be counted) until both the
 * count is back and no timer created by server code (src/) since the mark is alive.
 */
async function leakBaseline(): Promise<{ count: number; mark: number }> {
  return { count: await idleTimerCount(), mark: tracker.mark() };
}

async function expectNoLeak(baseline: { count: number; mark: number }): Promise<void> {
  const leaked = () => tracker.liveSince(baseline.mark, "/src/");
  const deadline = Date.now() + 5_000;
  while ((activeTimerCount() > baseline.count || leaked().length > 0) && Date.now() < deadline) await sleep(100);
  expect(leaked(), "timers created by the server during the test that are still alive").toEqual([]);
  expect(activeTimerCount(), `active resources: ${process.getActiveResourcesInfo().join(", ")}`).toBeLessThanOrEqual(baseline.count);
}

beforeAll(async () => {
  tracker = trackTimers();
  fx = await startSessionFixture({ env: { ROZ_DETACH_GRACE_MS: "300", ROZ_KEEPALIVE_INTERVAL_MS: "200" } });
  // Warm up every path once (client channel, provider connection pool) before measuring.
  const { client } = await fx.start("grpc-js", { tools: [tool("hold")] });
  fx.fake.plan({ toolCalls: [{ id: "call_warm", name: "hold", arguments: {} }] }, { text: "warm" });
  client.send(rq.user("warm up"));
  await nextOf(client, "toolRequest");
  client.send(rq.toolResult("call_warm", "ok"));
  expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  await fx.reset();
});
afterEach(() => fx.reset());
afterAll(async () => {
  tracker?.stop();
  await fx?.close();
});

it("disconnect while the model streams slowly: after the grace the provider request is aborted, nothing is left", async () => {
  const baseline = await leakBaseline();
  const { client, started } = await fx.start("grpc-js");
  fx.fake.plan({ text: "slow ".repeat(400), chunkSize: 5, frameDelayMs: 50 });
  client.send(rq.user("tell me a long story"));
  await nextOf(client, "textDelta");
  // Sanity: the measures see the stream's keepalive interval while the turn runs.
  expect(activeTimerCount()).toBeGreaterThan(baseline.count);
  expect(tracker.liveSince(baseline.mark, "/src/session/").length).toBeGreaterThan(0);
  const streaming = await fx.request(0);

  client.cancel();
  expect((await client.status).code).toBe(GRPC.CANCELLED); // locally
  // Detached, the turn runs on until the grace is over; then the session ends for good.
  await expect.poll(() => fx.server.app.registry.size, { timeout: 10_000 }).toBe(0);
  await streaming.closed;
  expect(streaming.aborted).toBe(true);
  expect(fx.server.app.registry.all().map((s) => s.id)).not.toContain(started.sessionId);
  await expectNoLeak(baseline);
});

it("disconnect while a tool request is pending: the wait and its timer end with the session", async () => {
  const baseline = await leakBaseline();
  const { client } = await fx.start("grpc-js", { tools: [tool("hold")] });
  fx.fake.plan({ toolCalls: [{ id: "call_hold", name: "hold", arguments: {} }] });
  client.send(rq.user("hold it"));
  const request = await nextOf(client, "toolRequest");
  expect(request.timeoutMs).toBe(120_000);
  await fx.request(0).then((r) => r.closed);
  // Sanity: the keepalive interval and the 120 s tool timer are both visible to the measures.
  expect(activeTimerCount()).toBeGreaterThanOrEqual(baseline.count + 2);
  expect(tracker.liveSince(baseline.mark, "/src/agent/pending.ts")).toHaveLength(1);

  client.cancel();
  await expect.poll(() => fx.server.app.registry.size, { timeout: 10_000 }).toBe(0);
  // The ended turn asked the provider nothing more.
  expect(fx.requests()).toHaveLength(1);
  await expectNoLeak(baseline);
});

it("disconnect while the provider is silent: the request is aborted after the grace", async () => {
  const baseline = await leakBaseline();
  const { client } = await fx.start("grpc-js");
  // Headers, then nothing (no timer in the fake: its timers would count too).
  fx.fake.plan({ stall: true });
  client.send(rq.user("hello"));
  const pending = await fx.request(0);
  client.cancel();
  await expect.poll(() => fx.server.app.registry.size, { timeout: 10_000 }).toBe(0);
  await pending.closed;
  expect(pending.aborted).toBe(true);
  await expectNoLeak(baseline);
});

it("ended sessions are left to the garbage collector: nothing of the server keeps them (or their agent, history and event log)", async () => {
  // The collector on demand, for this test only (the server never forces a collection).
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const ended: WeakRef<object>[] = [];
  for (const how of ["half-close", "cancel_session", "disconnect"] as const) {
    const { client, started } = await fx.start("grpc-js", { tools: [tool("read")] });
    fx.fake.plan({ toolCalls: [{ id: `call_${how}`, name: "read", arguments: {} }] }, { text: "x".repeat(10_000) });
    client.send(rq.user("read it"));
    await nextOf(client, "toolRequest");
    client.send(rq.toolResult(`call_${how}`, "y".repeat(10_000)));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    ended.push(new WeakRef(fx.server.app.registry.all().find((s) => s.id === started.sessionId)!));
    if (how === "half-close") client.end();
    else if (how === "cancel_session") client.send(rq.cancelSession("done"));
    else client.cancel();
    await expect.poll(() => fx.server.app.registry.size, { timeout: 10_000 }).toBe(0);
  }
  // A target read through its WeakRef is kept until the end of that job: collect in a later one.
  const collected = (): boolean[] => ended.map((ref) => ref.deref() === undefined);
  const deadline = Date.now() + 5_000;
  while (collected().includes(false) && Date.now() < deadline) {
    await sleep(50);
    gc();
    await sleep(50);
  }
  expect(collected()).toEqual([true, true, true]);
});
