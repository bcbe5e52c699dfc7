// Authentication, scopes and tenant isolation on every REST route and both RPCs, through a
// real server (HTTP/1.1 for REST, gRPC over h2c for the RPCs).
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueKey } from "../../src/auth/index.ts";
import type { TestServer } from "../support/server.ts";
import { client, makeKey, request, startAuthServer, startSession, type TestKey, watchTeam } from "../rest/support.ts";

let server: TestServer;
let acme: TestKey; // admin of tenant acme
let acmeTasksOnly: TestKey; // lacks sessions, environments and keys
let acmeSessionsOnly: TestKey; // lacks tasks
let revoked: TestKey;
let expired: string;
let globex: TestKey; // admin of another tenant
const ids = { environment: "", session: "", key: "" };

beforeAll(async () => {
  server = await startAuthServer();
  // Keys exist before the first request, so the server is closed from the start.
  acme = await makeKey(server, "acme");
  acmeTasksOnly = await makeKey(server, "acme", ["tasks"]);
  acmeSessionsOnly = await makeKey(server, "acme", ["sessions"]);
  revoked = await makeKey(server, "acme");
  await server.app.store.revokeKey(revoked.tenantId, revoked.id);
  expired = (await issueKey(server.app.store, { tenantId: acme.tenantId, name: "old", scopes: ["admin"], expiresAt: Date.now() - 1000 })).secret;
  globex = await makeKey(server, "globex");

  const api = client(server, acme.secret);
  const env = await api.post("/v1/environments", { body: { name: "acme-env" } });
  expect(env.status).toBe(201);
  ids.environment = env.json.id;
  const started = await startSession(server.url, acme.secret, { environmentId: ids.environment });
  expect(started.first.response.case).toBe("sessionStarted");
  ids.session = started.first.response.case === "sessionStarted" ? started.first.response.value.sessionId : "";
  started.session.end();
  expect(await started.session.done).toBeUndefined();
  ids.key = acmeTasksOnly.id;
});
afterAll(async () => {
  await server?.close();
});

interface Route {
  method: string;
  path: () => string;
  body?: unknown;
  scope: string;
  /** Names another object by id (another tenant gets 404). */
  byId?: boolean;
}

const routes: Route[] = [
  { method: "GET", path: () => "/v1/environments", scope: "environments" },
  { method: "POST", path: () => "/v1/environments", body: { name: "x" }, scope: "environments" },
  { method: "GET", path: () => `/v1/environments/${ids.environment}`, scope: "environments", byId: true },
  { method: "PATCH", path: () => `/v1/environments/${ids.environment}`, body: { kind: "hacked" }, scope: "environments", byId: true },
  { method: "DELETE", path: () => `/v1/environments/${ids.environment}`, scope: "environments", byId: true },
  { method: "GET", path: () => "/v1/sessions", scope: "sessions" },
  { method: "GET", path: () => `/v1/sessions/${ids.session}`, scope: "sessions", byId: true },
  { method: "GET", path: () => `/v1/sessions/${ids.session}/messages`, scope: "sessions", byId: true },
  { method: "DELETE", path: () => `/v1/sessions/${ids.session}`, scope: "sessions", byId: true },
  { method: "POST", path: () => "/v1/auth/keys", body: {}, scope: "keys" },
  { method: "GET", path: () => "/v1/auth/keys", scope: "keys" },
  { method: "GET", path: () => `/v1/auth/keys/${ids.key}`, scope: "keys", byId: true },
  { method: "DELETE", path: () => `/v1/auth/keys/${ids.key}`, scope: "keys", byId: true },
  { method: "POST", path: () => `/v1/auth/keys/${ids.key}/revoke`, scope: "keys", byId: true },
  { method: "POST", path: () => `/v1/auth/keys/${ids.key}/rotate`, scope: "keys", byId: true },
];

const send = (route: Route, key: string | undefined, headers: Record<string, string> = {}) =>
  request(server.url, route.method, route.path(), { key, headers, ...(route.body !== undefined ? { body: route.body } : {}) });

describe.each(routes)("$method $scope route", (route) => {
  it("without a key: 401 with a JSON error", async () => {
    const reply = await send(route, undefined);
    expect(reply.status).toBe(401);
    expect(reply.json.error.code).toBe("unauthenticated");
    expect(reply.headers.get("www-authenticate")).toMatch(/^Bearer/);
  });

  it("with a malformed, an unknown, a revoked or an expired key: 401", async () => {
    for (const key of ["nope", `roz_sk_${"A".repeat(43)}`, revoked.secret, expired]) {
      const reply = await send(route, key);
      expect(reply.status, key).toBe(401);
      expect(reply.json.error.code).toBe("unauthenticated");
    }
    const basic = await send(route, undefined, { authorization: `Basic ${Buffer.from("a:b").toString("base64")}` });
    expect(basic.status).toBe(401);
  });

  it("with a valid key that lacks the scope: 403", async () => {
    const reply = await send(route, route.scope === "sessions" ? acmeTasksOnly.secret : acmeSessionsOnly.secret);
    expect(reply.status).toBe(403);
    expect(reply.json.error.code).toBe("permission_denied");
    expect(reply.json.error.message).toContain(route.scope);
  });

  // Only routes by id have an id to guess: collection routes get no such case (not a skipped one).
  if (route.byId === true) {
    it("with another tenant's key: 404 exactly like an unknown id", async () => {
      const reply = await send(route, globex.secret);
      expect(reply.status).toBe(404);
      expect(reply.json.error.code).toBe("not_found");
      const unknown = await request(server.url, route.method, route.path().replace(/[0-9a-f-]{36}/, randomUUID()), {
        key: globex.secret,
        ...(route.body !== undefined ? { body: route.body } : {}),
      });
      expect(unknown.status).toBe(404);
      expect(unknown.json.error.code).toBe(reply.json.error.code);
    });
  }
});

describe("tenant isolation", () => {
  it("another tenant's attempts changed nothing", async () => {
    const api = client(server, acme.secret);
    const env = await api.get(`/v1/environments/${ids.environment}`);
    expect(env.status).toBe(200);
    expect(env.json.kind).toBe("default");
    const session = await api.get(`/v1/sessions/${ids.session}`);
    expect(session.json.status).toBe("completed");
    const key = await api.get(`/v1/auth/keys/${ids.key}`);
    expect(key.json.revoked_at).toBeUndefined();
  });

  it("lists only show the caller's tenant", async () => {
    const other = client(server, globex.secret);
    expect((await other.get("/v1/environments")).json.items.map((e: { id: string }) => e.id)).not.toContain(ids.environment);
    expect((await other.get("/v1/sessions")).json.items).toEqual([]);
    const keys = (await other.get("/v1/auth/keys")).json.items.map((k: { id: string }) => k.id);
    expect(keys).toEqual([globex.id]);
    const mine = (await client(server, acme.secret).get("/v1/auth/keys")).json.items.map((k: { id: string }) => k.id);
    expect(mine).toContain(acme.id);
    expect(mine).not.toContain(globex.id);
  });

  it("routes without credentials stay open", async () => {
    for (const path of ["/healthz", "/readyz", "/metrics", "/openapi.json", "/v1/version"]) {
      expect((await request(server.url, "GET", path)).status, path).toBe(200);
    }
  });
});

describe("StreamSession", () => {
  const fatal = async (key: string | undefined, start: { environmentId?: string } = {}) => {
    const outcome = await startSession(server.url, key, start);
    expect(outcome.first.response.case).toBe("error");
    return { inBand: outcome.first.response.case === "error" ? outcome.first.response.value.code : "", status: outcome.error?.code };
  };

  it("without a key, with a revoked or an expired key: in-band unauthenticated, then UNAUTHENTICATED", async () => {
    for (const key of [undefined, revoked.secret, expired, "roz_sk_garbage"]) {
      expect(await fatal(key)).toEqual({ inBand: "unauthenticated", status: Code.Unauthenticated });
    }
  });

  it("with a key that lacks the sessions scope: PERMISSION_DENIED", async () => {
    expect((await fatal(acmeTasksOnly.secret)).status).toBe(Code.PermissionDenied);
  });

  it("with another tenant's environment_id: not_found, like an unknown one", async () => {
    expect(await fatal(globex.secret, { environmentId: ids.environment })).toEqual({ inBand: "not_found", status: Code.NotFound });
    expect(await fatal(globex.secret, { environmentId: randomUUID() })).toEqual({ inBand: "not_found", status: Code.NotFound });
  });

  it("with a sessions-scoped key of the owner: starts in its own environment", async () => {
    const outcome = await startSession(server.url, acmeSessionsOnly.secret, { environmentId: ids.environment });
    expect(outcome.first.response.case).toBe("sessionStarted");
    outcome.session.end();
    expect(await outcome.session.done).toBeUndefined();
  });
});

describe("WatchTeam", () => {
  it("without a key or with a revoked key: UNAUTHENTICATED", async () => {
    expect((await watchTeam(server.url, undefined, randomUUID()))?.code).toBe(Code.Unauthenticated);
    expect((await watchTeam(server.url, revoked.secret, randomUUID()))?.code).toBe(Code.Unauthenticated);
  });

  it("with a key that lacks the tasks scope: PERMISSION_DENIED", async () => {
    expect((await watchTeam(server.url, acmeSessionsOnly.secret, randomUUID()))?.code).toBe(Code.PermissionDenied);
  });

  it("with a tasks key: an unknown task is NOT_FOUND", async () => {
    expect((await watchTeam(server.url, acmeTasksOnly.secret, randomUUID()))?.code).toBe(Code.NotFound);
  });
});
