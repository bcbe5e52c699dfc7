// Bad input on every REST route: always a 4xx with a JSON error body that names the problem,
// never a 500 and never plain text.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../support/server.ts";
import { client, makeKey, request, type Reply, startAuthServer } from "./support.ts";

const LIMIT = 16 * 1024;
let server: TestServer;
let key: string;
let api: ReturnType<typeof client>;
const ids = { environment: "", key: "" };

beforeAll(async () => {
  server = await startAuthServer({ ROZ_MAX_MESSAGE_BYTES: "16KiB", ROZ_RATE_LIMIT_PER_MINUTE: "0" });
  const admin = await makeKey(server, "acme");
  key = admin.secret;
  ids.key = admin.id;
  api = client(server, key);
  ids.environment = (await api.post("/v1/environments", { body: { name: "base" } })).json.id;
});
afterAll(async () => {
  await server?.close();
});

/** A JSON error with this status and code; returns the error for further checks. */
function expectError(reply: Reply, status: number, code: string): { code: string; message: string; details?: Record<string, unknown> } {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
  expect(reply.json.error.code).toBe(code);
  expect(typeof reply.json.error.message).toBe("string");
  return reply.json.error;
}

const bodyRoutes = [
  { method: "POST", path: () => "/v1/environments" },
  { method: "PATCH", path: () => `/v1/environments/${ids.environment}` },
  { method: "POST", path: () => "/v1/auth/keys" },
];

describe.each(bodyRoutes)("$method body route", (route) => {
  const send = (raw: string, contentType = "application/json") => request(server.url, route.method, route.path(), { key, raw, contentType });

  it("malformed JSON is 400", async () => {
    expectError(await send('{"name": '), 400, "invalid_argument");
    expectError(await send("[1,2"), 400, "invalid_argument");
  });

  it("a JSON value that is not an object is 400 naming the body", async () => {
    expect(expectError(await send("[]"), 400, "invalid_argument").message).toMatch(/^body/);
    expect(expectError(await send('"x"'), 400, "invalid_argument").message).toMatch(/^body/);
  });

  it("a wrong content type is 415", async () => {
    expectError(await send("name=x", "application/x-www-form-urlencoded"), 415, "unsupported_media_type");
    expectError(await send('{"name":"x"}', "text/plain"), 415, "unsupported_media_type");
  });

  it("an oversized body is 413", async () => {
    const big = JSON.stringify({ name: "x".repeat(LIMIT + 100) });
    expectError(await send(big), 413, "payload_too_large");
  });

  it("an unknown field is 400 naming it", async () => {
    const error = expectError(await send('{"name":"fine","colour":"red"}'), 400, "invalid_argument");
    expect(error.message).toBe("body.colour: unknown field");
    expect(error.details?.["field"]).toBe("body.colour");
  });
});

describe("field validation", () => {
  it("wrong types are 400 naming the field, with no coercion", async () => {
    const cases: [string, unknown, string][] = [
      ["/v1/environments", { name: 5 }, "body.name"],
      ["/v1/environments", { name: "ok", permissions: "deny" }, "body.permissions"],
      ["/v1/environments", { name: "ok", tool_defaults: [] }, "body.tool_defaults"],
      ["/v1/environments", { name: "ok", is_default: "true" }, "body.is_default"],
      ["/v1/auth/keys", { scopes: "sessions" }, "body.scopes"],
      ["/v1/auth/keys", { name: 1 }, "body.name"],
    ];
    for (const [path, body, field] of cases) {
      const error = expectError(await api.post(path, { body }), 400, "invalid_argument");
      expect(error.message, JSON.stringify(body)).toContain(field);
    }
  });

  it("missing required fields and empty or padded names are 400", async () => {
    expect(expectError(await api.post("/v1/environments", { body: {} }), 400, "invalid_argument").message).toBe(
      "body.name: must have required property 'name'",
    );
    expectError(await api.post("/v1/environments", { body: { name: "" } }), 400, "invalid_argument");
    expectError(await api.post("/v1/environments", { body: { name: " padded " } }), 400, "invalid_argument");
    expectError(await api.patch(`/v1/environments/${ids.environment}`, { body: { name: null } }), 400, "invalid_argument");
  });

  it("a body-less POST where a body is required is 400", async () => {
    expectError(await request(server.url, "POST", "/v1/environments", { key }), 400, "invalid_argument");
    expectError(await request(server.url, "POST", "/v1/environments", { key, raw: "", contentType: "application/json" }), 400, "invalid_argument");
  });
});

describe("ids, limits and cursors", () => {
  it("a malformed id is 400 naming the parameter", async () => {
    for (const path of ["/v1/environments/nope", "/v1/sessions/123/messages", "/v1/auth/keys/x/rotate"]) {
      const method = path.endsWith("rotate") ? "POST" : "GET";
      const error = expectError(await request(server.url, method, path, { key }), 400, "invalid_argument");
      expect(error.message).toMatch(/^params\.id/);
    }
  });

  it.each(["/v1/environments", "/v1/sessions", "/v1/auth/keys"])("%s: limit must be 1..200, cursors must be ours", async (path) => {
    expect(expectError(await api.get(`${path}?limit=201`), 400, "invalid_argument").message).toBe("querystring.limit: must be <= 200");
    expectError(await api.get(`${path}?limit=100000000000`), 400, "invalid_argument");
    expectError(await api.get(`${path}?limit=0`), 400, "invalid_argument");
    expectError(await api.get(`${path}?limit=ten`), 400, "invalid_argument");
    expectError(await api.get(`${path}?limit=1.5`), 400, "invalid_argument");
    expect((await api.get(`${path}?limit=200`)).status).toBe(200);
    for (const cursor of ["!!!", "bm90IGpzb24", Buffer.from('{"a":1}').toString("base64url"), "x".repeat(600)]) {
      expectError(await api.get(`${path}?cursor=${cursor}`), 400, "invalid_argument");
    }
    expect(expectError(await api.get(`${path}?colour=red`), 400, "invalid_argument").message).toBe("querystring.colour: unknown field");
  });

  it("session filters are validated", async () => {
    expect(expectError(await api.get("/v1/sessions?status=running"), 400, "invalid_argument").message).toContain("querystring.status");
    expect(expectError(await api.get("/v1/sessions?environment_id=abc"), 400, "invalid_argument").message).toContain("querystring.environment_id");
  });
});

describe("everything else", () => {
  it("unknown routes and methods are JSON 404s", async () => {
    expectError(await api.get("/v1/nothing"), 404, "route_not_found");
    expectError(await api.patch("/v1/auth/keys", { body: {} }), 404, "route_not_found");
  });

  it("the server is still healthy after all that", async () => {
    expect((await request(server.url, "GET", "/readyz")).status).toBe(200);
  });
});
