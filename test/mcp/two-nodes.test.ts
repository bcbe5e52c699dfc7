// §12 with two nodes on one PostgreSQL: a server registered through one node is used by a
// session on the other, and its degradation seen by the first reaches that session; an OAuth
// authorization begun on one node is completed by the callback on the other.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.ts";
import { startOAuthServer, type TestOAuthServer } from "../support/oauth-server.ts";
import { postgresForTests } from "../support/postgres.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { readTurn, rq, valuesOf } from "../support/session-protocol.ts";
import { type SessionFixture, startSessionFixture } from "../session/fixture.ts";

const pg = await postgresForTests();
const offered = (body: any): string[] =>
  (body.tools ?? []).map((t: { function: { name: string } }) => t.function.name).filter((n: string) => n.startsWith("mcp__"));

describe.skipIf(pg === undefined)("two nodes sharing one MCP registry", () => {
  let mcp: TestMcpServer;
  let as: TestOAuthServer;
  let secured: TestMcpServer;
  let a: TestServer;
  let b: SessionFixture;
  const env = {
    ROZ_MCP_ALLOW_PRIVATE: "1",
    ROZ_SECRET_KEY: randomBytes(32).toString("hex"),
    ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "mcp__*", policy: "allow" }]),
  };
  const postA = (path: string, body: unknown) =>
    fetch(a.url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(async (r) => ({
      status: r.status,
      json: await r.json(),
    }));

  beforeAll(async () => {
    const databaseUrl = await pg!.createDatabase();
    mcp = await startMcpServer();
    as = await startOAuthServer();
    secured = await startMcpServer({ oauth: as });
    b = await startSessionFixture({ env: { ...env, DATABASE_URL: databaseUrl, ROZ_NODE_ID: "node-b" } });
    // Node a's public address is node b's, as behind a load balancer that sent the browser there.
    a = await startServer({ ...env, DATABASE_URL: databaseUrl, ROZ_NODE_ID: "node-a", ROZ_PUBLIC_URL: b.server.url });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await mcp?.close();
    await secured?.close();
    await as?.close();
    await pg?.stop();
  });

  it("registered on one node, used on the other; degraded by one, told on the other", async () => {
    expect((await postA("/v1/mcp-servers", { name: "shared", url: mcp.url })).status).toBe(201);
    const { client } = await b.start("connect");
    b.fake.plan({ toolCalls: [{ id: "n1", name: "mcp__shared__echo", arguments: { text: "across" } }] }, { text: "done" });
    client.send(rq.user("use it"));
    await readTurn(client);
    expect(offered((await b.request(0)).body)).toContain("mcp__shared__echo");
    expect(mcp.calls).toEqual([{ tool: "echo", args: { text: "across" } }]);

    mcp.setDown(true);
    for (let i = 0; i < 3; i++) await postA("/v1/mcp-servers/shared/health", {});
    expect((await b.rest("GET", "/v1/mcp-servers/shared")).json).toMatchObject({ health_status: "degraded", failure_count: 3 });

    b.fake.plan({ text: "without" });
    client.send(rq.user("again"));
    const turn = await readTurn(client);
    expect(valuesOf(turn, "mcpServerDegraded")).toEqual([expect.objectContaining({ serverName: "shared", failureCount: 3 })]);
    expect(offered((await b.request(2)).body)).toEqual([]);
    mcp.setDown(false);
  });

  it("an OAuth authorization registered through one node is completed by the callback on the other", async () => {
    const registered = await postA("/v1/mcp-servers", { name: "secured", url: secured.url, auth: { kind: "oauth" } });
    const url = registered.json.oauth_pending.authorization_url as string;
    expect(new URL(url).searchParams.get("redirect_uri")).toBe(`${b.server.url}/v1/mcp/oauth/callback`);
    expect((await fetch(url)).status).toBe(200);
    expect((await postA("/v1/mcp-servers/secured/health", {})).json).toMatchObject({ health_status: "healthy" });
    const { client } = await b.start("connect");
    b.fake.plan({ toolCalls: [{ id: "o1", name: "mcp__secured__echo", arguments: { text: "authorized" } }] }, { text: "done" });
    client.send(rq.user("use the secured one"));
    await readTurn(client);
    expect(secured.calls).toEqual([{ tool: "echo", args: { text: "authorized" } }]);
  });
});
