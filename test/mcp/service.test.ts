// §12 McpServerService over gRPC and REST /v1/mcp-servers on a server with keys: every RPC and
// route, the `mcp` scope, tenant isolation, sealed credentials that no answer carries, and
// the refusals (no secret key, OAuth without an authorization server, private addresses without the flag).
import { randomBytes } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { McpAuthKind, McpHealthStatus, McpServerService, McpTransport } from "../../src/gen/roz/v1/agent_pb.js";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.ts";
import type { TestServer } from "../support/server.ts";
import { client, grpcTransport, makeKey, startAuthServer, startSession, type TestKey } from "../rest/support.ts";

const TOKEN = "tok-very-secret-123";
const HEADER_VALUE = "hdr-very-secret-456";

let server: TestServer;
let mcp: TestMcpServer;
let admin: TestKey;
let sessionsOnly: TestKey;
let mcpOnly: TestKey;
let other: TestKey;
/** Every answer body seen, to check no credential ever comes back. */
const answers: string[] = [];

const rpc = (key: TestKey) => createClient(McpServerService, grpcTransport(server.url, key.secret));
const rest = (key: TestKey) => {
  const c = client(server, key.secret);
  const keep = async <T extends { text: string }>(p: Promise<T>) => {
    const r = await p;
    answers.push(r.text);
    return r;
  };
  return {
    get: (path: string) => keep(c.get(path)),
    post: (path: string, body?: unknown) => keep(c.post(path, body === undefined ? {} : { body })),
    delete: (path: string) => keep(c.delete(path)),
  };
};
const codeOf = async (p: Promise<unknown>): Promise<Code | undefined> =>
  p.then(
    () => undefined,
    (err: unknown) => ConnectError.from(err).code,
  );

beforeAll(async () => {
  mcp = await startMcpServer();
  server = await startAuthServer({ ROZ_SECRET_KEY: randomBytes(32).toString("hex"), ROZ_MCP_ALLOW_PRIVATE: "1" });
  admin = await makeKey(server, "acme");
  sessionsOnly = await makeKey(server, "acme", ["sessions"]);
  mcpOnly = await makeKey(server, "acme", ["mcp"]);
  other = await makeKey(server, "globex");
});
afterAll(async () => {
  await server?.close();
  await mcp?.close();
});

describe("McpServerService (gRPC)", () => {
  it("Register, List, Get, HealthCheck and Delete; the bearer token is sent to the server, never returned", async () => {
    const registered = await rpc(mcpOnly).register({
      name: "gh",
      transport: McpTransport.STREAMABLE_HTTP,
      url: mcp.url,
      enabled: true,
      auth: { config: { case: "bearer", value: { token: TOKEN } } },
    });
    expect(registered.result.case).toBe("server");
    const detail = registered.result.case === "server" ? registered.result.value : undefined;
    expect(detail).toMatchObject({ name: "gh", url: mcp.url, enabled: true, authKind: McpAuthKind.BEARER, hasCredentials: true, failureCount: 0 });
    expect(detail?.healthStatus).toBe(McpHealthStatus.HEALTHY);

    const list = await rpc(sessionsOnly).list({});
    expect(list.servers.map((s) => [s.name, s.transport, s.authKind])).toEqual([["gh", McpTransport.STREAMABLE_HTTP, McpAuthKind.BEARER]]);
    expect((await rpc(sessionsOnly).get({ name: "gh" })).hasCredentials).toBe(true);

    const before = mcp.headers.length;
    const health = await rpc(sessionsOnly).healthCheck({ name: "gh" });
    expect(health).toMatchObject({ name: "gh", healthStatus: McpHealthStatus.HEALTHY, failureCount: 0 });
    expect(mcp.headers.slice(before).some((h) => h.authorization === `Bearer ${TOKEN}`)).toBe(true);

    for (const answer of [registered, list, health]) expect(JSON.stringify(answer)).not.toContain(TOKEN);
    // At rest the token is sealed.
    const row = await server.app.store.getMcpServer(admin.tenantId, "gh");
    expect(row?.sealedCredentials).toBeDefined();
    expect(row?.sealedCredentials).not.toContain(TOKEN);

    expect((await rpc(admin).delete({ name: "gh" })).deleted).toBe(true);
    expect((await rpc(admin).delete({ name: "gh" })).deleted).toBe(false);
    expect(await codeOf(rpc(admin).get({ name: "gh" }))).toBe(Code.NotFound);
  });

  it("Register and Delete need the mcp scope; other tenants see nothing", async () => {
    const init = { name: "scoped", url: mcp.url, enabled: true };
    expect(await codeOf(rpc(sessionsOnly).register(init))).toBe(Code.PermissionDenied);
    await rpc(admin).register(init);
    expect(await codeOf(rpc(sessionsOnly).delete({ name: "scoped" }))).toBe(Code.PermissionDenied);
    expect((await rpc(other).list({})).servers).toEqual([]);
    expect(await codeOf(rpc(other).get({ name: "scoped" }))).toBe(Code.NotFound);
    expect(await codeOf(rpc(other).healthCheck({ name: "scoped" }))).toBe(Code.NotFound);
    expect((await rpc(other).delete({ name: "scoped" })).deleted).toBe(false);
    expect(await codeOf(createClient(McpServerService, grpcTransport(server.url)).list({}))).toBe(Code.Unauthenticated);
    await rpc(admin).delete({ name: "scoped" });
  });

  it("refuses OAuth with a server that has no authorization server, bad names and a session of another tenant", async () => {
    const oauth = rpc(admin).register({ name: "o", url: mcp.url, enabled: true, auth: { config: { case: "oauth", value: { scopes: [] } } } });
    expect(await codeOf(oauth)).toBe(Code.FailedPrecondition);
    expect(await codeOf(rpc(admin).get({ name: "o" }))).toBe(Code.NotFound);
    const badScope = rpc(admin).register({ name: "o", url: mcp.url, enabled: true, auth: { config: { case: "oauth", value: { scopes: ["a b"] } } } });
    expect(await codeOf(badScope)).toBe(Code.InvalidArgument);
    expect(await codeOf(rpc(admin).register({ name: "a__b", url: mcp.url, enabled: true }))).toBe(Code.InvalidArgument);
    expect(await codeOf(rpc(admin).register({ name: "x", url: "ftp://example.com", enabled: true }))).toBe(Code.InvalidArgument);
    const missing = rpc(admin).register({ name: "s", url: mcp.url, enabled: true, sessionId: "6a1f3d4e-0000-4000-8000-000000000000" });
    expect(await codeOf(missing)).toBe(Code.NotFound);
  });
});

describe("REST /v1/mcp-servers", () => {
  it("create, list, get, health and delete; the header value never comes back", async () => {
    const api = rest(mcpOnly);
    const created = await api.post("/v1/mcp-servers", {
      name: "hdr",
      url: mcp.url,
      auth: { kind: "static_header", header_name: "X-Api-Key", header_value: HEADER_VALUE },
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: "hdr", transport: "streamable_http", enabled: true, auth_kind: "static_header", has_credentials: true });
    expect((await api.get("/v1/mcp-servers")).json.servers.map((s: { name: string }) => s.name)).toEqual(["hdr"]);
    expect((await rest(sessionsOnly).get("/v1/mcp-servers/hdr")).json).toMatchObject({ health_status: "healthy", failure_count: 0 });
    const before = mcp.headers.length;
    const health = await rest(sessionsOnly).post("/v1/mcp-servers/hdr/health");
    expect(health.json).toEqual({ name: "hdr", health_status: "healthy", failure_count: 0 });
    expect(mcp.headers.slice(before).some((h) => h["x-api-key"] === HEADER_VALUE)).toBe(true);
    expect((await rest(sessionsOnly).delete("/v1/mcp-servers/hdr")).status).toBe(403);
    expect((await api.delete("/v1/mcp-servers/hdr")).json).toEqual({ deleted: true });
    expect((await api.get("/v1/mcp-servers/hdr")).status).toBe(404);
  });

  it("answers JSON errors for bad input, OAuth without an authorization server, scope and other tenants", async () => {
    const api = rest(admin);
    const noUrl = await api.post("/v1/mcp-servers", { name: "x" });
    expect(noUrl.status).toBe(400);
    expect(noUrl.json.error.code).toBe("invalid_argument");
    expect((await api.post("/v1/mcp-servers", { name: "x", url: mcp.url, auth: { kind: "bearer" } })).status).toBe(400);
    expect(
      (await api.post("/v1/mcp-servers", { name: "x", url: mcp.url, auth: { kind: "static_header", header_name: "Host", header_value: "v" } })).status,
    ).toBe(400);
    const oauth = await api.post("/v1/mcp-servers", { name: "x", url: mcp.url, auth: { kind: "oauth" } });
    expect(oauth.status).toBe(502);
    expect(oauth.json.error).toMatchObject({ code: "mcp_oauth_failed", message: expect.stringMatching(/OAuth/) });
    expect((await api.get("/v1/mcp-servers/x")).status).toBe(404);
    const httpMetadata = await api.post("/v1/mcp-servers", { name: "x", url: mcp.url, auth: { kind: "oauth", client_metadata_url: "http://example.com/c" } });
    expect(httpMetadata.status).toBe(400);
    expect((await rest(sessionsOnly).post("/v1/mcp-servers", { name: "x", url: mcp.url })).status).toBe(403);
    expect((await api.post("/v1/mcp-servers", { name: "mine", url: mcp.url })).status).toBe(201);
    expect((await rest(other).get("/v1/mcp-servers/mine")).status).toBe(404);
    expect((await rest(other).get("/v1/mcp-servers")).json).toEqual({ servers: [] });
    // The same name in another tenant is another server.
    expect((await rest(other).post("/v1/mcp-servers", { name: "mine", url: mcp.url })).status).toBe(201);
    expect((await rest(other).delete("/v1/mcp-servers/mine")).json).toEqual({ deleted: true });
    expect((await api.get("/v1/mcp-servers/mine")).status).toBe(200);
  });

  it("a session is offered its own tenant's servers only: another tenant's tool is unknown to it", async () => {
    expect((await rest(admin).post("/v1/mcp-servers", { name: "iso", url: mcp.url })).status).toBe(201);
    const before = mcp.calls.length;
    const script = { responses: [[{ tool_call: { name: "mcp__iso__echo", arguments: { text: "leak?" } } }], [{ text: "done" }]] };
    const { session } = await startSession(server.url, other.secret, { model: "scripted/default" });
    session.send({ request: { case: "userMessage", value: { content: `script: ${JSON.stringify(script)}` } } });
    const denied: { toolName: string; reason: string }[] = [];
    for (let r = await session.next(); r.response.case !== "turnComplete"; r = await session.next()) {
      if (r.response.case === "toolDenied") denied.push(r.response.value);
    }
    expect(denied).toEqual([expect.objectContaining({ toolName: "mcp__iso__echo", reason: "unknown_tool" })]);
    expect(mcp.calls.length).toBe(before);
    session.end();
    await session.done;
    await rest(admin).delete("/v1/mcp-servers/iso");
  });

  it("no answer ever carried a credential", () => {
    for (const text of answers) {
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(HEADER_VALUE);
    }
  });
});

describe("without ROZ_SECRET_KEY or ROZ_MCP_ALLOW_PRIVATE", () => {
  let bare: TestServer;
  let key: TestKey;
  beforeAll(async () => {
    bare = await startAuthServer();
    key = await makeKey(bare, "acme");
  });
  afterAll(() => bare?.close());

  it("refuses a credential or OAuth without a secret key, saying so", async () => {
    for (const auth of [{ kind: "bearer", token: TOKEN }, { kind: "oauth" }]) {
      const r = await client(bare, key.secret).post("/v1/mcp-servers", { body: { name: "gh", url: "https://example.com/mcp", auth } });
      expect(r.status).toBe(412);
      expect(r.json.error).toMatchObject({ code: "secret_key_missing", message: expect.stringContaining("ROZ_SECRET_KEY") });
    }
  });

  it("refuses loopback, private, metadata and mapped addresses", async () => {
    for (const url of [
      mcp.url,
      "http://localhost:1/mcp",
      "http://169.254.169.254/latest",
      "http://10.1.2.3/mcp",
      "http://[::1]:80/",
      "http://[::ffff:127.0.0.1]/",
    ]) {
      const r = await client(bare, key.secret).post("/v1/mcp-servers", { body: { name: "ssrf", url } });
      expect(r.status, url).toBe(400);
      expect(r.json.error.message, url).toMatch(/ROZ_MCP_ALLOW_PRIVATE|does not resolve/);
    }
    const grpc = createClient(McpServerService, grpcTransport(bare.url, key.secret));
    expect(await codeOf(grpc.register({ name: "ssrf", url: "http://169.254.169.254/", enabled: true }))).toBe(Code.InvalidArgument);
  });
});
