// §13 Budgets: a session's (StartSession.budget and its environment's, the lower limit wins)
// and its tenant's per calendar month. Before each model call — team workers' too, which count
// toward their parent session — a spent budget refuses the call: the provider is not called, the
// turn ends with SessionError{budget_exceeded, retryable:false} + turn_complete{budget_exceeded},
// and later turns are refused the same way until the budget is raised.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { script } from "../conformance/support.ts";
import { GRPC } from "../session/fixture.ts";
import type { SessionClient } from "../support/session-client.ts";
import { readTurn, responseValue, rq, textOf, tool, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { startSpendFixture } from "./support.ts";

let fx: Awaited<ReturnType<typeof startSpendFixture>>;
beforeAll(async () => {
  fx = await startSpendFixture();
});
afterEach(() => fx.reset());
afterAll(() => fx?.dispose());

/** A turn refused by a budget, exactly as §13 says: no model call was made for it. */
async function expectRefused(client: SessionClient, content: string, reason: RegExp): Promise<SessionResponse[]> {
  const calls = fx.fake.requests.length;
  client.send(rq.user(content));
  const turn = await readTurn(client);
  const errors = valuesOf(turn, "error");
  expect(errors).toEqual([expect.objectContaining({ code: "budget_exceeded", retryable: false })]);
  expect(errors[0]!.message).toMatch(reason);
  const done = turnCompleteOf(turn);
  expect(done.stopReason).toBe("budget_exceeded");
  expect(done.costUsd).toBe(0);
  expect(textOf(turn)).toBe("");
  expect(fx.fake.requests.length).toBe(calls);
  return turn;
}

async function environment(body: Record<string, unknown>): Promise<string> {
  const env = await fx.rest("POST", "/v1/environments", { name: `env-${Date.now()}-${Math.random()}`, ...body });
  expect(env.status, JSON.stringify(env.json)).toBe(201);
  return env.json.id as string;
}

describe("session budgets", () => {
  it("StartSession.budget: once its tokens are spent the next turns are refused before any model call", async () => {
    const { client, started } = await fx.start("connect", { budget: { maxTokens: 1000n } });
    fx.fake.plan({ text: "spent it", usage: { input: 1000, output: 200 } });
    client.send(rq.user("spend"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    await expectRefused(client, "more", /session's token budget is spent \(1200 of 1000 tokens\)/);
    await expectRefused(client, "and more", /session's token budget/);
    const session = (await fx.rest("GET", `/v1/sessions/${started.sessionId}`)).json;
    expect(session).toMatchObject({ budget: { max_tokens: 1000 }, spent: { tokens: 1200 }, turn_count: 3 });
  });

  it("a call already streaming finishes; the next call of the same turn is refused", async () => {
    const { client } = await fx.start("grpc-js", { budget: { maxTokens: 500n }, tools: [tool("read_file")] });
    fx.fake.plan({ text: "reading", toolCalls: [{ id: "r1", name: "read_file", arguments: { path: "a" } }], usage: { input: 400, output: 200 } });
    client.send(rq.user("read a"));
    const request = responseValue(await client.responses.nextMatching((r) => r.response.case === "toolRequest", 10_000), "toolRequest");
    client.send(rq.toolResult(request.toolCallId, "contents"));
    const turn = await readTurn(client);
    const done = turnCompleteOf(turn);
    expect(done.stopReason).toBe("budget_exceeded");
    expect(done.usage).toMatchObject({ inputTokens: 400, outputTokens: 200 });
    expect(done.costUsd).toBeGreaterThan(0);
    expect(valuesOf(turn, "error")).toEqual([expect.objectContaining({ code: "budget_exceeded", retryable: false })]);
    expect(fx.requests()).toHaveLength(1);
  });

  it("the environment's budget applies too, the lower limit wins, and raising it lets turns through", async () => {
    const envId = await environment({ budget: { max_cost_usd: 0.001 } });
    expect((await fx.rest("GET", `/v1/environments/${envId}`)).json.budget).toEqual({ max_cost_usd: 0.001 });
    // The start's own limit is higher: the environment's holds. 1000 input tokens at 2 USD per million is 0.002.
    const { client } = await fx.start("connect", { environmentId: envId, budget: { maxCostUsd: 1 } });
    fx.fake.plan({ text: "costly", usage: { input: 1000, output: 0 } }, { text: "through again", usage: { input: 10, output: 1 } });
    client.send(rq.user("spend"));
    await readTurn(client);
    await expectRefused(client, "more", /session's cost budget is spent \(0\.002 of 0\.001 USD\)/);
    expect((await fx.rest("PATCH", `/v1/environments/${envId}`, { budget: { max_cost_usd: 0.01 } })).status).toBe(200);
    client.send(rq.user("raised"));
    const turn = await readTurn(client);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    expect(textOf(turn)).toBe("through again");
    // Removing it (null) leaves no limit.
    expect((await fx.rest("PATCH", `/v1/environments/${envId}`, { budget: null })).json.budget).toBeUndefined();

    // The start's limit lower than the environment's: the start's holds.
    const roomy = await environment({ budget: { max_tokens: 1_000_000 } });
    const second = (await fx.start("grpc-js", { environmentId: roomy, budget: { maxTokens: 10n } })).client;
    fx.fake.plan({ text: "once", usage: { input: 20, output: 1 } });
    second.send(rq.user("spend"));
    await readTurn(second);
    await expectRefused(second, "more", /session's token budget is spent \(21 of 10 tokens\)/);
  });

  it("bad budgets are refused: REST with a 400 naming the field, StartSession with INVALID_ARGUMENT", async () => {
    for (const budget of [{ max_tokens: -1 }, { max_cost_usd: "1" }, { max_cost_usd: -0.5 }, { tokens: 5 }, 5]) {
      const bad = await fx.rest("POST", "/v1/environments", { name: `bad-${Math.random()}`, budget });
      expect(bad.status, JSON.stringify(budget)).toBe(400);
      expect(bad.json.error.message).toMatch(/budget/);
    }
    const client = fx.open("connect");
    client.send(rq.start({ budget: { maxCostUsd: -1 } }));
    expect(responseValue(await client.next(), "error")).toMatchObject({
      code: "invalid_argument",
      message: expect.stringMatching(/start\.budget\.max_cost_usd/),
    });
    expect((await client.status).code).toBe(GRPC.INVALID_ARGUMENT);
  });

  it("a team worker's model calls count toward its parent session's budget", async () => {
    const envId = await environment({ teams: { enabled: true } });
    const { client } = await fx.start("connect", { environmentId: envId, model: "scripted/default", budget: { maxTokens: 1000n } });
    const small = { usage: { input_tokens: 10, output_tokens: 1 } };
    const worker = script([[{ text: "worker done" }, { usage: { input_tokens: 2000, output_tokens: 0 } }]]);
    client.send(
      rq.user(
        script([
          [{ tool_call: { id: "s1", name: "spawn_worker", arguments: { prompt: worker } } }, small],
          [{ tool_call: { id: "w1", name: "wait_for_workers", arguments: {} } }, small],
          [{ text: "never said" }, small],
        ]),
      ),
    );
    const turn = await readTurn(client);
    expect(valuesOf(turn, "teamStarted")).toHaveLength(1);
    const done = turnCompleteOf(turn);
    // The session's own calls used 22 tokens; the worker's 2000 spent the budget before the third call.
    expect(done.stopReason).toBe("budget_exceeded");
    expect(done.usage).toMatchObject({ inputTokens: 20, outputTokens: 2 });
    expect(textOf(turn)).not.toContain("never said");
  });
});

describe("tenant monthly budget", () => {
  const tenantId = async () => (await fx.server.app.store.ensureTenant("default")).id;
  afterEach(async () => {
    await fx.server.app.store.setTenantBudget(await tenantId(), { monthlyTokens: null, monthlyCostUsd: null });
  });

  it("GET /v1/budget shows the limits and this month's spend; a spent limit refuses every session's turns until it is raised", async () => {
    const empty = await fx.rest("GET", "/v1/budget");
    expect(empty.status).toBe(200);
    expect(empty.json).toEqual({
      month: new Date().toISOString().slice(0, 7),
      monthly_tokens: null,
      monthly_cost_usd: null,
      spent_tokens: expect.any(Number),
      spent_cost_usd: expect.any(Number),
    });
    const before = empty.json.spent_tokens as number;
    await fx.server.app.store.setTenantBudget(await tenantId(), { monthlyTokens: before + 1000, monthlyCostUsd: 100 });

    const { client } = await fx.start("connect");
    fx.fake.plan({ text: "big", usage: { input: 1000, output: 200 } });
    client.send(rq.user("spend"));
    await readTurn(client);
    const spent = (await fx.rest("GET", "/v1/budget")).json;
    expect(spent).toMatchObject({ monthly_tokens: before + 1000, monthly_cost_usd: 100, spent_tokens: before + 1200 });
    expect(spent.spent_cost_usd - empty.json.spent_cost_usd).toBeCloseTo(0.004, 12);

    await expectRefused(client, "more", /tenant's monthly token budget is spent/);
    // Every session of the tenant, a new one too.
    const other = (await fx.start("grpc-js")).client;
    await expectRefused(other, "hello", /tenant's monthly token budget is spent/);

    await fx.server.app.store.setTenantBudget(await tenantId(), { monthlyTokens: before + 100_000 });
    fx.fake.plan({ text: "raised" });
    other.send(rq.user("again"));
    const turn = await readTurn(other);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    expect(textOf(turn)).toBe("raised");
  });
});
