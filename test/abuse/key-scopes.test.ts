// A key may only create, revoke or rotate keys whose scopes it holds itself (admin holds
// all): every pair of (caller's extra scope, target key's scope), for all three actions.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../src/auth/index.ts";
import type { TestServer } from "../support/server.ts";
import { client, makeKey, startAuthServer } from "../rest/support.ts";

describe("key scopes", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startAuthServer();
  });
  afterAll(() => server?.close());

  // Every caller needs `keys` to reach the routes at all; it holds one more scope (or none).
  const callers: string[][] = [["keys"], ...SCOPES.filter((s) => s !== "keys").map((s) => ["keys", s])];

  for (const callerScopes of callers) {
    for (const target of SCOPES) {
      const allowed = callerScopes.includes("admin") || callerScopes.includes(target);
      it(`a key with [${callerScopes}] ${allowed ? "may" : "may not"} create, revoke or rotate a [${target}] key`, async () => {
        const tenant = `t-${callerScopes.join("-")}-${target}`;
        const caller = await makeKey(server, tenant, callerScopes, "caller");
        const api = client(server, caller.secret);

        const created = await api.post("/v1/auth/keys", { body: { name: "new", scopes: [target] } });
        expect(created.status, created.text).toBe(allowed ? 201 : 403);

        for (const path of ["rotate", "revoke", "delete"] as const) {
          const victim = await makeKey(server, tenant, [target], "victim");
          const reply = path === "delete" ? await api.delete(`/v1/auth/keys/${victim.id}`) : await api.post(`/v1/auth/keys/${victim.id}/${path}`);
          expect(reply.status, `${path}: ${reply.text}`).toBe(allowed ? (path === "rotate" ? 201 : path === "revoke" ? 200 : 204) : 403);
          if (!allowed) {
            expect(reply.json.error).toMatchObject({ code: "permission_denied", message: expect.stringContaining(`"${target}"`) });
            // Refused means untouched: the victim's key still works.
            const still = await client(server, victim.secret).get("/v1/auth/keys");
            expect([200, 403]).toContain(still.status);
            const stored = await server.app.store.getKey(victim.tenantId, victim.id);
            expect(stored?.revokedAt).toBeUndefined();
          }
        }
      });
    }
  }
});
