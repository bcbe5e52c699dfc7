// §12 OAuth 2.1 for MCP servers, end to end: a real authorization server (test/support) in front
// of the SDK's MCP server, which then needs its access tokens. Register (REST and gRPC) answers
// oauth_pending; following the authorization URL as a browser would lands on roz's callback;
// then the tools are offered and called, tokens are refreshed on a 401 and before they expire,
// the state is single use and expiring, and no token or client secret ever comes back.
import { createHash, randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { McpHealthStatus, McpOauthPendingStatus, McpServerService } from "../../src/gen/roz/v1/agent_pb.js";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.ts";
import { startOAuthServer, type TestOAuthServer } from "../support/oauth-server.ts";
import { readTurn, rq } from "../support/session-protocol.ts";
import { grpcTransport } from "../rest/support.ts";
import { toolMessages } from "../session/chat-body.ts";
import { type SessionFixture, startSessionFixture, UUID } from "../session/fixture.ts";

let fx: SessionFixture;
let as: TestOAuthServer;
let mcp: TestMcpServer;
/** Every answer roz gave, to check that none carries a secret. */
const answers: string[] = [];

const offered = (body: any): string[] => (body.tools ?? []).map((t: { function: { name: string } }) => t.function.name);
const rest = async (method: string, path: string, body?: unknown) => {
  const r = await fx.rest(method, path, body);
  answers.push(JSON.stringify(r.json));
  return r;
};
const rpc = () => createClient(McpServerService, grpcTransport(fx.server.url));
/** Opens `url` as a browser would: the authorization server redirects to roz's callback. */
const browse = async (url: string, accept = "application/json") => {
  const r = await fetch(url, { headers: { accept } });
  const text = await r.text();
  answers.push(text);
  return { status: r.status, text, json: r.headers.get("content-type")?.includes("json") ? JSON.parse(text) : undefined };
};
const registerOAuth = async (name: string, auth: Record<string, unknown> = {}) => {
  const r = await rest("POST", "/v1/mcp-servers", { name, url: mcp.url, auth: { kind: "oauth", ...auth } });
  expect(r.status).toBe(201);
  return r.json.oauth_pending.authorization_url as string;
};
/** One turn whose model calls `tool`; returns the tool result the model got back. */
const callTool = async (tool: string, text: string) => {
  const { client } = await fx.start("connect");
  fx.fake.plan({ toolCalls: [{ id: "c1", name: tool, arguments: { text } }] }, { text: "done" });
  client.send(rq.user("use it"));
  await readTurn(client);
  return toolMessages(fx.requests().at(-1)!.body).map((m) => m.content);
};
const lastBearer = () => String(mcp.headers.at(-1)?.authorization ?? "").replace(/^Bearer /, "");

beforeAll(async () => {
  as = await startOAuthServer();
  mcp = await startMcpServer({ oauth: as });
  fx = await startSessionFixture({
    env: {
      ROZ_SECRET_KEY: randomBytes(32).toString("hex"),
      ROZ_MCP_ALLOW_PRIVATE: "1",
      ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "mcp__*", policy: "allow" }]),
    },
  });
});
afterEach(() => fx.reset());
afterAll(async () => {
  await fx?.close();
  await mcp?.close();
  await as?.close();
});

describe("OAuth MCP servers", () => {
  it("REST: register answers oauth_pending; until authorized nothing is offered; after the callback the tools are called with its token", async () => {
    const created = await rest("POST", "/v1/mcp-servers", { name: "secure", url: mcp.url, auth: { kind: "oauth", scopes: ["mcp:tools"] } });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: "secure", auth_kind: "oauth", health_status: "oauth_pending", has_credentials: false });
    const pending = created.json.oauth_pending;
    expect(pending).toMatchObject({ approval_id: expect.stringMatching(UUID), status: "pending" });
    // Discovery and dynamic registration happened; the URL asks for a code with PKCE, back to roz.
    expect(as.hits["/register"]).toBe(1);
    const authorization = new URL(pending.authorization_url);
    expect(authorization.origin + authorization.pathname).toBe(`${as.url}/authorize`);
    expect(Object.fromEntries(authorization.searchParams)).toMatchObject({
      response_type: "code",
      code_challenge_method: "S256",
      redirect_uri: `${fx.server.url}/v1/mcp/oauth/callback`,
      scope: "mcp:tools",
      state: expect.stringMatching(/^[\w-]{40,}$/),
    });
    expect((await rest("GET", "/v1/mcp-servers/secure")).json).toMatchObject({ health_status: "oauth_pending", last_error: expect.stringMatching(/OAuth/) });

    const before = await fx.start("connect");
    fx.fake.plan({ text: "nothing yet" });
    before.client.send(rq.user("tools?"));
    await readTurn(before.client);
    expect(offered((await fx.request(0)).body).filter((n) => n.startsWith("mcp__secure__"))).toEqual([]);
    expect((await rest("GET", "/v1/mcp-servers/secure")).json).toMatchObject({ health_status: "oauth_pending", failure_count: 0 });

    const callback = await browse(pending.authorization_url);
    expect(callback).toMatchObject({ status: 200, json: { authorized: true, name: "secure" } });
    expect((await rest("GET", "/v1/mcp-servers/secure")).json).toMatchObject({ health_status: "healthy", has_credentials: true });

    expect(await callTool("mcp__secure__echo", "with a token")).toEqual(["echo: with a token"]);
    expect(as.valid(lastBearer())).toBe(true);
    // At rest, the grant is sealed.
    const [row] = (await fx.server.app.store.listMcpServers((await fx.server.app.store.getTenantByName("default"))!.id)).filter((s) => s.name === "secure");
    for (const secret of as.secrets()) expect(row?.sealedCredentials).not.toContain(secret);
  });

  it("gRPC: Register answers oauth_pending; Get and HealthCheck say it waits; the callback's page authorizes it", async () => {
    const registered = await rpc().register({ name: "secure-rpc", url: mcp.url, enabled: true, auth: { config: { case: "oauth", value: { scopes: [] } } } });
    answers.push(JSON.stringify(registered));
    expect(registered.result.case).toBe("oauthPending");
    const pending = registered.result.case === "oauthPending" ? registered.result.value : undefined;
    expect(pending?.status).toBe(McpOauthPendingStatus.PENDING);
    expect(pending?.approvalId).toMatch(UUID);
    const waiting = await rpc().get({ name: "secure-rpc" });
    expect(waiting).toMatchObject({ healthStatus: McpHealthStatus.UNSPECIFIED, hasCredentials: false, lastError: expect.stringMatching(/OAuth/) });
    const asked = mcp.headers.length;
    expect((await rpc().healthCheck({ name: "secure-rpc" })).healthStatus).toBe(McpHealthStatus.UNSPECIFIED);
    expect(mcp.headers.length).toBe(asked);

    const page = await browse(pending!.authorizationUrl, "text/html");
    expect(page.status).toBe(200);
    expect(page.text).toContain("<b>secure-rpc</b>");
    const ready = await rpc().get({ name: "secure-rpc" });
    expect(ready).toMatchObject({ healthStatus: McpHealthStatus.HEALTHY, hasCredentials: true });
    const health = await rpc().healthCheck({ name: "secure-rpc" });
    expect(health.healthStatus).toBe(McpHealthStatus.HEALTHY);
    answers.push(JSON.stringify(waiting), JSON.stringify(ready), JSON.stringify(health));
  });

  it("the state is checked: unknown, missing, reused and expired states and a denial are clear 4xx errors", async () => {
    const unknown = await browse(`${fx.server.url}/v1/mcp/oauth/callback?state=forged&code=x`);
    expect(unknown).toMatchObject({ status: 400, json: { error: { code: "mcp_oauth_state_invalid" } } });
    expect((await browse(`${fx.server.url}/v1/mcp/oauth/callback?code=x`)).status).toBe(400);

    // The callback URL the authorization server redirects to works once.
    const redirect = await fetch(await registerOAuth("once"), { redirect: "manual" });
    const callbackUrl = redirect.headers.get("location")!;
    expect(callbackUrl.startsWith(`${fx.server.url}/v1/mcp/oauth/callback?`)).toBe(true);
    expect((await browse(callbackUrl)).status).toBe(200);
    expect(await browse(callbackUrl)).toMatchObject({ status: 400, json: { error: { code: "mcp_oauth_state_invalid" } } });

    // A pending approval past its time.
    const late = await registerOAuth("late");
    const store = fx.server.app.store;
    const taken = await store.takeMcpOauthPending(createHash("sha256").update(new URL(late).searchParams.get("state")!).digest("hex"));
    await store.putMcpOauthPending({ ...taken!, expiresAt: Date.now() - 1 });
    expect(await browse(late)).toMatchObject({ status: 410, json: { error: { code: "mcp_oauth_state_expired" } } });

    as.approve = false;
    try {
      expect(await browse(await registerOAuth("refused"))).toMatchObject({ status: 403, json: { error: { code: "mcp_oauth_denied" } } });
      expect((await rest("GET", "/v1/mcp-servers/refused")).json.health_status).toBe("oauth_pending");
    } finally {
      as.approve = true;
    }
  });

  it("an access token the server no longer takes is refreshed on its 401, and stored for every node", async () => {
    await browse(await registerOAuth("rotating"));
    expect(await callTool("mcp__rotating__echo", "one")).toEqual(["echo: one"]);
    const sealed = async () =>
      (await fx.server.app.store.listMcpServers((await fx.server.app.store.getTenantByName("default"))!.id)).find((s) => s.name === "rotating")
        ?.sealedCredentials;
    const before = { refreshes: as.grants.refresh_token ?? 0, unauthorized: mcp.unauthorized, sealed: await sealed() };
    as.expireAll();
    expect(await callTool("mcp__rotating__echo", "two")).toEqual(["echo: two"]);
    expect(mcp.unauthorized).toBeGreaterThan(before.unauthorized);
    expect(as.grants.refresh_token).toBe(before.refreshes + 1);
    expect(as.valid(lastBearer())).toBe(true);
    expect(await sealed()).not.toBe(before.sealed);
  });

  it("an access token about to expire is refreshed before it is used", async () => {
    as.accessTokenTtlS = 1;
    try {
      await browse(await registerOAuth("short"));
      expect(await callTool("mcp__short__echo", "first")).toEqual(["echo: first"]);
      const first = lastBearer();
      await expect.poll(() => as.valid(first), { timeout: 3_000, interval: 50 }).toBe(false);
      const before = { refreshes: as.grants.refresh_token ?? 0, unauthorized: mcp.unauthorized };
      expect(await callTool("mcp__short__echo", "second")).toEqual(["echo: second"]);
      expect(as.grants.refresh_token).toBeGreaterThan(before.refreshes);
      expect(mcp.unauthorized).toBe(before.unauthorized);
    } finally {
      as.accessTokenTtlS = 3600;
    }
  });

  it("no answer ever carried an access token, a refresh token, a code or a client secret", () => {
    expect(as.secrets().length).toBeGreaterThan(10);
    for (const secret of as.secrets()) for (const answer of answers) expect(answer).not.toContain(secret);
  });
});
