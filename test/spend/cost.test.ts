// §13 Spend: what each turn costs at the providers file's prices, in turn_complete.cost_usd,
// REST usage.cost_usd (the session and its turns) and roz_cost_usd_total; an unpriced model costs 0.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readTurn, rq, turnCompleteOf } from "../support/session-protocol.ts";
import { script } from "../conformance/support.ts";
import { expectedCost, FAKE_PRICE, metricCost, restUsage, SCRIPTED_PRICE, startSpendFixture } from "./support.ts";

let fx: Awaited<ReturnType<typeof startSpendFixture>>;
beforeAll(async () => {
  fx = await startSpendFixture();
});
afterEach(() => fx.reset());
afterAll(() => fx?.dispose());

describe("cost of a turn", () => {
  it("a priced model: uncached input, cache reads and output at their prices, in turn_complete, REST and /metrics", async () => {
    const before = (await metricCost(fx.server.url, "openai/fake-model")) ?? 0;
    const { client, started } = await fx.start("connect");
    fx.fake.plan({ text: "priced" }, { text: "again" });
    client.send(rq.user("hello"));
    const first = turnCompleteOf(await readTurn(client));
    client.send(rq.user("more"));
    const second = turnCompleteOf(await readTurn(client));
    // The fake reports usage from the request size: each turn's own tokens price it.
    const costs = [first, second].map((t) => expectedCost({ input: t.usage!.inputTokens, output: t.usage!.outputTokens }, FAKE_PRICE));
    expect(costs[0]).toBeGreaterThan(0);
    expect(first.costUsd).toBeCloseTo(costs[0]!, 12);
    expect(second.costUsd).toBeCloseTo(costs[1]!, 12);

    const { session, turns } = await restUsage(fx, started.sessionId);
    expect(turns.map((t) => t.usage.cost_usd)).toEqual([expect.closeTo(costs[0]!, 12), expect.closeTo(costs[1]!, 12)]);
    expect(session.usage.cost_usd).toBeCloseTo(costs[0]! + costs[1]!, 12);
    expect(session.spent).toEqual({ tokens: session.usage.input_tokens + session.usage.output_tokens, cost_usd: expect.closeTo(costs[0]! + costs[1]!, 12) });
    expect((await metricCost(fx.server.url, "openai/fake-model"))! - before).toBeCloseTo(costs[0]! + costs[1]!, 12);
  });

  it("cache reads are priced apart from fresh input", async () => {
    const { client } = await fx.start("grpc-js");
    fx.fake.plan({ text: "cached", usage: { input: 1000, output: 200, cached: 400 } });
    client.send(rq.user("hello"));
    const done = turnCompleteOf(await readTurn(client));
    expect(done.usage).toMatchObject({ inputTokens: 1000, cacheReadTokens: 400, outputTokens: 200 });
    // 600 × 2 + 400 × 0.5 + 200 × 10 per million.
    expect(done.costUsd).toBeCloseTo(0.0034, 12);
  });

  it('cache writes are priced apart too (a scripted model priced by "*")', async () => {
    const { client, started } = await fx.start("connect", { model: "scripted/default" });
    const usage = { input_tokens: 1000, output_tokens: 100, cache_read_tokens: 300, cache_creation_tokens: 200 };
    client.send(rq.user(script([[{ text: "ok" }, { usage }]])));
    const done = turnCompleteOf(await readTurn(client));
    const cost = expectedCost({ input: 1000, output: 100, cacheRead: 300, cacheWrite: 200 }, SCRIPTED_PRICE);
    expect(cost).toBeCloseTo(0.001025, 12);
    expect(done.costUsd).toBeCloseTo(cost, 12);
    expect((await restUsage(fx, started.sessionId)).session.usage.cost_usd).toBeCloseTo(cost, 12);
    expect(await metricCost(fx.server.url, "scripted/default")).toBeGreaterThanOrEqual(cost - 1e-12);
  });

  it("a model without a price costs 0 everywhere", async () => {
    const { client, started } = await fx.start("connect", { model: "openai/free-model" });
    fx.fake.plan({ text: "free", usage: { input: 1000, output: 200 } });
    client.send(rq.user("hello"));
    const done = turnCompleteOf(await readTurn(client));
    expect(done.usage?.inputTokens).toBe(1000);
    expect(done.costUsd).toBe(0);
    const { session, turns } = await restUsage(fx, started.sessionId);
    expect(session.usage).toMatchObject({ input_tokens: 1000, cost_usd: 0 });
    expect(turns[0].usage.cost_usd).toBe(0);
    expect(await metricCost(fx.server.url, "openai/free-model")).toBe(0);
  });
});
