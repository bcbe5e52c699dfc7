// Per-key rate limits: REST requests (429 + retry-after) and session starts (in-band
// resource_exhausted, then RESOURCE_EXHAUSTED).
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../support/server.ts";
import { client, makeKey, request, startAuthServer, startSession, type TestKey } from "./support.ts";

let server: TestServer;
let first: TestKey;
let second: TestKey;

beforeAll(async () => {
  server = await startAuthServer({ ROZ_RATE_LIMIT_PER_MINUTE: "3", ROZ_SESSION_RATE_LIMIT_PER_MINUTE: "1" });
  first = await makeKey(server, "acme");
  second = await makeKey(server, "acme");
});
afterAll(async () => {
  await server?.close();
});

describe("REST rate limit (3 per minute per key)", () => {
  it("the request over the budget is a JSON 429 with retry-after; other keys and open routes are unaffected", async () => {
    const api = client(server, first.secret);
    for (let i = 0; i < 3; i++) expect((await api.get("/v1/sessions")).status).toBe(200);
    const limited = await api.get("/v1/environments");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("content-type")).toMatch(/^application\/json/);
    expect(limited.json.error.code).toBe("rate_limited");
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.json.error.details.retry_after_seconds).toBe(retryAfter);

    expect((await client(server, second.secret).get("/v1/sessions")).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await request(server.url, "GET", "/healthz")).status).toBe(200);
    // Unauthenticated requests are refused before they could spend anyone's budget.
    expect((await request(server.url, "GET", "/v1/sessions")).status).toBe(401);
  });
});

describe("session start rate limit (1 per minute per key)", () => {
  it("the start over the budget fails with resource_exhausted; another key may still start", async () => {
    const ok = await startSession(server.url, first.secret);
    expect(ok.first.response.case).toBe("sessionStarted");
    ok.session.end();
    await ok.session.done;

    const refused = await startSession(server.url, first.secret);
    expect(refused.first.response.case).toBe("error");
    if (refused.first.response.case === "error") {
      expect(refused.first.response.value).toMatchObject({ code: "resource_exhausted", retryable: true });
    }
    expect(refused.error?.code).toBe(Code.ResourceExhausted);

    const other = await startSession(server.url, second.secret);
    expect(other.first.response.case).toBe("sessionStarted");
    other.session.end();
    await other.session.done;
  });
});
