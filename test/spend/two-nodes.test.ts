// §13 with many nodes: a tenant's month is counted in the database, so two nodes on one
// PostgreSQL see each other's spend, and of two calls racing for the last of a budget only
// one is made (check-and-reserve in the store).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai/index.ts";
import { postgresForTests } from "../support/postgres.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { readTurn, rq, startSession, textOf, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";

const pg = await postgresForTests();

describe.skipIf(pg === undefined)("two nodes sharing one tenant's monthly budget", () => {
  let fake: FakeOpenAI;
  const nodes: { server: TestServer; clients: SessionClientFactory }[] = [];

  beforeAll(async () => {
    const databaseUrl = await pg!.createDatabase();
    fake = await startFakeOpenAI();
    for (const id of ["node-a", "node-b"]) {
      const server = await startServer({
        DATABASE_URL: databaseUrl,
        ROZ_NODE_ID: id,
        OPENAI_API_KEY: "sk-test",
        OPENAI_BASE_URL: fake.baseURL,
        ROZ_OPENAI_API: "chat",
        ROZ_DEFAULT_MODEL: "openai/fake-model",
      });
      nodes.push({ server, clients: sessionClientFactory("connect", server.url) });
    }
  });
  afterAll(async () => {
    for (const node of nodes) {
      node.clients.close();
      await node.server.close();
    }
    await fake?.close();
    await pg?.stop();
  });

  it("one node's spend refuses the other's calls; racing for the last of the budget, one call is made", async () => {
    const [a, b] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    const store = a.server.app.store;
    const tenant = await store.ensureTenant("default");
    await store.setTenantBudget(tenant.id, { monthlyTokens: 1 });
    const clients = [a.clients.open(), b.clients.open()];
    for (const client of clients) await startSession(client);

    // One reply only, slow to come: a second request would find none and fail the turn with model_error.
    fake.plan({ text: "only one", headersDelayMs: 300, usage: { input: 100, output: 10 } });
    for (const client of clients) client.send(rq.user("race"));
    const turns = await Promise.all(clients.map((client) => readTurn(client)));
    expect(turns.map((t) => turnCompleteOf(t).stopReason).sort()).toEqual(["budget_exceeded", "end_turn"]);
    expect(turns.map(textOf).sort()).toEqual(["", "only one"]);
    expect(fake.requests).toHaveLength(1);
    const refused = turns.find((t) => turnCompleteOf(t).stopReason === "budget_exceeded")!;
    expect(valuesOf(refused, "error")).toEqual([expect.objectContaining({ code: "budget_exceeded", retryable: false })]);

    // Either node shows the month's spend and refuses from now on.
    const seen = await (await fetch(`${b.server.url}/v1/budget`)).json();
    expect(seen).toMatchObject({ monthly_tokens: 1, spent_tokens: 110 });
    for (const client of clients) {
      client.send(rq.user("again"));
      expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("budget_exceeded");
    }
    expect(fake.requests).toHaveLength(1);

    // Raised on one node, the other's next call goes through.
    await b.server.app.store.setTenantBudget(tenant.id, { monthlyTokens: null });
    fake.plan({ text: "raised" });
    clients[0]!.send(rq.user("raised?"));
    expect(textOf(await readTurn(clients[0]!))).toBe("raised");
    for (const client of clients) client.end();
  });
});
