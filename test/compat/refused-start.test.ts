// v0.2 compatibility, session-behaviour.md §1 and §8: a key without the `sessions` scope is
// told `permission_denied` (then PERMISSION_DENIED), and a refused `start` creates nothing in
// the store, not even the tenant's default environment. Real clients over h2c, real SQLite.
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { makeKey, type TestKey } from "../rest/support.ts";
import { GRPC, type SessionFixture, startSessionFixture } from "../session/fixture.ts";
import type { ClientKind } from "../support/session-client.ts";
import { rq, type StartInit, tool, responseValue } from "../support/session-protocol.ts";

const PERMISSION_DENIED = 7;

let fx: SessionFixture;
let tasksOnly: TestKey;

beforeAll(async () => {
  fx = await startSessionFixture({ env: { ROZ_AUTH: "required" } });
  // A key exists before the first request, so the server is closed from the start.
  tasksOnly = await makeKey(fx.server, "acme", ["tasks"]);
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

const bearer = (key: TestKey) => ({ authorization: `Bearer ${key.secret}` });

/** What the tenant has in the store: environments and sessions. */
async function stored(key: TestKey) {
  const store = fx.server.app.store;
  return {
    environments: (await store.listEnvironments(key.tenantId)).items.map((e) => e.name),
    sessions: (await store.listSessions(key.tenantId)).items.length,
  };
}

describe.each<ClientKind>(["grpc-js", "connect"])("%s", (kind) => {
  it("a key without the sessions scope: in-band permission_denied, then PERMISSION_DENIED", async () => {
    const client = fx.open(kind, bearer(tasksOnly));
    client.send(rq.start());
    expect(responseValue(await client.next(), "error")).toMatchObject({ code: "permission_denied", retryable: false });
    expect((await client.status).code).toBe(PERMISSION_DENIED);
  });

  it.each<[string, StartInit, number]>([
    ["model_unavailable", { model: "nowhere/none" }, GRPC.FAILED_PRECONDITION],
    ["not_found", { environmentId: randomUUID() }, GRPC.NOT_FOUND],
    ["invalid_argument", { environmentId: "not-a-uuid" }, GRPC.INVALID_ARGUMENT],
    ["invalid_argument", { tools: [tool("probe", { parameters: { type: "string" } })] }, GRPC.INVALID_ARGUMENT],
  ])("a start refused with %s creates nothing, not even the default environment", async (code, start, status) => {
    const key = await makeKey(fx.server, `tenant-${randomUUID()}`, ["sessions"]);
    const client = fx.open(kind, bearer(key));
    client.send(rq.start(start));
    expect(responseValue(await client.next(), "error")).toMatchObject({ code, retryable: false });
    expect((await client.status).code).toBe(status);
    expect(await stored(key)).toEqual({ environments: [], sessions: 0 });

    // The first accepted start creates the default environment and the session.
    const next = fx.open(kind, bearer(key));
    next.send(rq.start());
    expect((await next.next()).response.case).toBe("sessionStarted");
    expect(await stored(key)).toEqual({ environments: ["default"], sessions: 1 });
  });
});
