// /readyz asks the store for real; /v1/version names it; /openapi.json documents the REST API.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../support/server.ts";
import { request, startAuthServer } from "./support.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startAuthServer();
});
afterAll(async () => {
  await server?.close();
});

describe("operations routes", () => {
  it("/v1/version names the store", async () => {
    expect((await request(server.url, "GET", "/v1/version")).json.store).toBe("sqlite");
  });

  it("/openapi.json documents every REST route with its schemas and bearer security", async () => {
    const doc = (await request(server.url, "GET", "/openapi.json")).json;
    const expected: [string, string][] = [
      ["/v1/environments", "post"],
      ["/v1/environments", "get"],
      ["/v1/environments/{id}", "patch"],
      ["/v1/environments/{id}", "delete"],
      ["/v1/sessions", "get"],
      ["/v1/sessions/{id}", "delete"],
      ["/v1/sessions/{id}/messages", "get"],
      ["/v1/auth/keys", "post"],
      ["/v1/auth/keys/{id}/rotate", "post"],
      ["/v1/auth/keys/{id}/revoke", "post"],
      ["/metrics", "get"],
    ];
    for (const [path, method] of expected) expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    const create = doc.paths["/v1/environments"].post;
    expect(create.requestBody.content["application/json"].schema.additionalProperties).toBe(false);
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(["201", "400", "401", "403", "409", "413", "415", "422", "429"]));
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(doc.paths["/metrics"].get.security).toEqual([]);
  });

  it("/readyz is 503 with the failing check when the store does not answer", async () => {
    const ready = await request(server.url, "GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.json.checks).toContainEqual({ name: "store", ok: true });
    await server.app.store.close();
    const down = await request(server.url, "GET", "/readyz");
    expect(down.status).toBe(503);
    expect(down.json.status).toBe("unavailable");
    expect(down.json.checks).toContainEqual(expect.objectContaining({ name: "store", ok: false, error: expect.any(String) }));
    expect((await request(server.url, "GET", "/healthz")).status).toBe(200);
  });
});
