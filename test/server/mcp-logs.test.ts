// §12: MCP credentials never appear in a log line, even at level trace, through registration,
// health checks, a failing server and a session that calls the server's tool (a real process).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.ts";
import { type SpawnedServer, spawnServer } from "../support/server.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { readTurn, rq, startSession } from "../support/session-protocol.ts";

const TOKEN = "tok-log-secret-789";
const HEADER_VALUE = "hdr-log-secret-012";
const KEY = randomBytes(32).toString("hex");

let roz: SpawnedServer;
let mcp: TestMcpServer;

beforeAll(async () => {
  mcp = await startMcpServer();
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
});

const post = (path: string, body: unknown) =>
  fetch(roz.url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.status);

it("no log line carries a token, a header value or the secret key", async () => {
  expect(await post("/v1/mcp-servers", { name: "gh", url: mcp.url, auth: { kind: "bearer", token: TOKEN } })).toBe(201);
  expect(await post("/v1/mcp-servers", { name: "hdr", url: mcp.url, auth: { kind: "static_header", header_name: "X-Key", header_value: HEADER_VALUE } })).toBe(
    201,
  );
  expect(await post("/v1/mcp-servers", { name: "bad", url: "http://127.0.0.1:1/mcp", auth: { kind: "bearer", token: TOKEN } })).toBe(201);
  expect(await post("/v1/mcp-servers/gh/health", {})).toBe(200);
  for (let i = 0; i < 3; i++) await post("/v1/mcp-servers/bad/health", {});

  const factory = sessionClientFactory("connect", roz.url);
  const client = factory.open();
  await startSession(client);
  const script = { responses: [[{ tool_call: { name: "mcp__gh__echo", arguments: { text: "logged?" } } }], [{ text: "done" }]] };
  client.send(rq.user(`script: ${JSON.stringify(script)}`));
  await readTurn(client);
  expect(mcp.calls.some((c) => c.tool === "echo")).toBe(true);
  expect(mcp.headers.some((h) => h.authorization === `Bearer ${TOKEN}`)).toBe(true);
  client.send(rq.cancelSession());
  await client.status;
  factory.close();

  const output = roz.stdout() + roz.stderr();
  expect(output).toContain("MCP server degraded");
  for (const secret of [TOKEN, HEADER_VALUE, KEY]) expect(output).not.toContain(secret);
});
