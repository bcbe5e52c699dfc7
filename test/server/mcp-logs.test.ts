// §12: MCP credentials never appear in a log line, even at level trace, through registration,
// health checks, a failing server, a session that calls the server's tool, and an OAuth server
// authorized through the callback whose token is refreshed (a real process).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.ts";
import { startOAuthServer, type TestOAuthServer } from "../support/oauth-server.ts";
import { type SpawnedServer, spawnServer } from "../support/server.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { readTurn, rq, startSession } from "../support/session-protocol.ts";

const TOKEN = "tok-log-secret-789";
const HEADER_VALUE = "hdr-log-secret-012";
const KEY = randomBytes(32).toString("hex");

let roz: SpawnedServer;
let mcp: TestMcpServer;
let as: TestOAuthServer;
let secured: TestMcpServer;

beforeAll(async () => {
  mcp = await startMcpServer();
  as = await startOAuthServer();
  secured = await startMcpServer({ oauth: as });
  roz = await spawnServer({
    ROZ_LOG_LEVEL: "trace",
    ROZ_SECRET_KEY: KEY,
    ROZ_MCP_ALLOW_PRIVATE: "1",
    ROZ_MCP_CALL_TIMEOUT_MS: "1000",
    ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "mcp__*", policy: "allow" }]),
  });
});
afterAll(async () => {
  await roz?.dispose();
  await mcp?.close();
  await secured?.close();
  await as?.close();
});

const post = (path: string, body: unknown) =>
  fetch(roz.url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.status);

/** A turn on a new session whose scripted model calls `tool` once. */
async function callTool(tool: string, text: string): Promise<void> {
  const factory = sessionClientFactory("connect", roz.url);
  const client = factory.open();
  await startSession(client);
  const script = { responses: [[{ tool_call: { name: tool, arguments: { text } } }], [{ text: "done" }]] };
  client.send(rq.user(`script: ${JSON.stringify(script)}`));
  await readTurn(client);
  client.send(rq.cancelSession());
  await client.status;
  factory.close();
}

it("no log line carries a token, a header value, an OAuth token, code or client secret, or the secret key", async () => {
  expect(await post("/v1/mcp-servers", { name: "gh", url: mcp.url, auth: { kind: "bearer", token: TOKEN } })).toBe(201);
  expect(await post("/v1/mcp-servers", { name: "hdr", url: mcp.url, auth: { kind: "static_header", header_name: "X-Key", header_value: HEADER_VALUE } })).toBe(
    201,
  );
  expect(await post("/v1/mcp-servers", { name: "bad", url: "http://127.0.0.1:1/mcp", auth: { kind: "bearer", token: TOKEN } })).toBe(201);
  expect(await post("/v1/mcp-servers/gh/health", {})).toBe(200);
  for (let i = 0; i < 3; i++) await post("/v1/mcp-servers/bad/health", {});

  await callTool("mcp__gh__echo", "logged?");
  expect(mcp.calls.some((c) => c.tool === "echo")).toBe(true);
  expect(mcp.headers.some((h) => h.authorization === `Bearer ${TOKEN}`)).toBe(true);

  // OAuth: register, authorize through the callback, call, and refresh after the server's 401.
  const registered = await fetch(`${roz.url}/v1/mcp-servers`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "sec", url: secured.url, auth: { kind: "oauth" } }),
  });
  const { oauth_pending } = (await registered.json()) as { oauth_pending: { authorization_url: string } };
  expect((await fetch(oauth_pending.authorization_url)).status).toBe(200);
  await callTool("mcp__sec__echo", "authorized");
  as.expireAll();
  await callTool("mcp__sec__echo", "refreshed");
  expect(secured.calls.map((c) => c.args)).toEqual([{ text: "authorized" }, { text: "refreshed" }]);
  expect(as.grants.refresh_token).toBe(1);

  const output = roz.stdout() + roz.stderr();
  expect(output).toContain("MCP server degraded");
  expect(output).toContain("/v1/mcp/oauth/callback");
  for (const secret of [TOKEN, HEADER_VALUE, KEY, ...as.secrets()]) expect(output).not.toContain(secret);
});
