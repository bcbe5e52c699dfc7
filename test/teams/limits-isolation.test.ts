// Team limits with their errors, the `tasks` scope, and tenant isolation on REST and WatchTeam.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGrpcJsClient, req } from "../support/grpc-js-client.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { client, makeKey, startAuthServer, watchTeam, type TestKey } from "../rest/support.ts";
import { says, script, settledTask, teamsEnvironment } from "./support.ts";

const hang = script([[{ delay_ms: 60_000 }]]);

describe("limits", () => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startServer({ ROZ_TEAM_MAX_WORKERS_PER_TASK: "2", ROZ_TEAM_MAX_RUNNING_WORKERS_PER_TENANT: "3" });
    api = client(server);
  });
  afterAll(() => server.close());

  it("more workers than a task may have: 409 task_worker_limit, nothing created", async () => {
    const before = (await api.get("/v1/tasks")).json.items.length;
    const r = await api.post("/v1/tasks", { body: { prompt: "p", workers: [{ prompt: "a" }, { prompt: "b" }, { prompt: "c" }] } });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe("task_worker_limit");
    expect(r.json.error.message).toMatch(/at most 2 workers/);
    expect((await api.get("/v1/tasks")).json.items.length).toBe(before);
  });

  it("more running workers than the tenant may have: 429 tenant_worker_limit; room again once they end", async () => {
    const first = await api.post("/v1/tasks", { body: { prompt: "p", workers: [{ prompt: hang }, { prompt: hang }] } });
    expect(first.status).toBe(201);
    const second = await api.post("/v1/tasks", { body: { prompt: "p", workers: [{ prompt: hang }, { prompt: hang }] } });
    expect(second.status).toBe(429);
    expect(second.json.error.code).toBe("tenant_worker_limit");
    expect((await api.delete(`/v1/tasks/${first.json.id}`)).status).toBe(200);
    const third = await api.post("/v1/tasks", { body: { prompt: says("fits") } });
    expect(third.status).toBe(201);
    expect((await settledTask(api.get, third.json.id)).workers[0].result).toBe("fits");
  });

  it("a session's spawn over the task limit gets an in-band resource_exhausted result", async () => {
    const grpc = createGrpcJsClient(server.url);
    const call = grpc.openSession();
    call.send(req.start({ environment_id: await teamsEnvironment(client(server)) }));
    await call.next(10_000);
    const spawn = (id: string) => ({ tool_call: { id, name: "spawn_worker", arguments: { prompt: says(id) } } });
    call.send(
      req.userMessage(script([[spawn("s1")], [spawn("s2")], [spawn("s3")], [{ tool_call: { name: "wait_for_workers", arguments: {} } }], [{ text: "ok" }]])),
    );
    let sessionId = "";
    for (;;) {
      const r = await call.next(20_000);
      if (r.response === "session_started") sessionId = (r.session_started as { session_id: string }).session_id;
      if (r.response === "turn_complete") break;
    }
    call.end();
    await call.status;
    grpc.close();
    const sessions = await api.get("/v1/sessions?limit=1");
    sessionId ||= sessions.json.items[0].id;
    const turns = (await api.get(`/v1/sessions/${sessionId}/messages?format=turns`)).json.turns;
    const spawns = turns[0].tool_calls.filter((c: { name: string }) => c.name === "spawn_worker");
    expect(spawns.map((c: { success: boolean }) => c.success)).toEqual([true, true, false]);
    expect(spawns[2].result).toMatch(/^resource_exhausted: a task may have at most 2 workers/);
  });

  it("bad REST input is a 400 naming the field", async () => {
    const r = await api.post("/v1/tasks", { body: { prompt: "" } });
    expect(r.status).toBe(400);
    expect((await api.post("/v1/tasks", { body: { prompt: "p", workers: [{ prompt: "x", mode: "fast" }] } })).status).toBe(400);
    expect((await api.post("/v1/tasks", { body: { prompt: "p", model: "nope/nope" } })).json.error.code).toBe("model_unavailable");
    expect((await api.get("/v1/tasks/not-a-uuid")).status).toBe(400);
    expect((await api.get("/v1/tasks?status=weird")).status).toBe(400);
    expect((await api.delete("/v1/tasks/00000000-0000-4000-8000-000000000000?reason=maybe")).status).toBe(400);
  });
});

describe("scope and tenant isolation", () => {
  let server: TestServer;
  let alice: TestKey;
  let bob: TestKey;
  let sessionsOnly: TestKey;
  let taskId: string;
  beforeAll(async () => {
    server = await startAuthServer();
    alice = await makeKey(server, "alice");
    bob = await makeKey(server, "bob");
    sessionsOnly = await makeKey(server, "alice", ["sessions"]);
    const created = await client(server, alice.secret).post("/v1/tasks", { body: { prompt: says("alice's") } });
    expect(created.status).toBe(201);
    taskId = created.json.id;
    await settledTask(client(server, alice.secret).get, taskId);
  });
  afterAll(() => server.close());

  it("another tenant's task is unknown everywhere: REST 404, WatchTeam NOT_FOUND", async () => {
    const b = client(server, bob.secret);
    expect((await b.get(`/v1/tasks/${taskId}`)).status).toBe(404);
    expect((await b.delete(`/v1/tasks/${taskId}`)).status).toBe(404);
    expect((await b.get("/v1/tasks")).json.items).toEqual([]);
    expect((await watchTeam(server.url, bob.secret, taskId))?.code).toBe(Code.NotFound);
    expect(await watchTeam(server.url, alice.secret, taskId)).toBeUndefined();
  });

  it("another tenant's session cannot lend its tools: 404", async () => {
    const sessions = await client(server, alice.secret).get("/v1/sessions");
    const someId = sessions.json.items[0]?.id ?? "00000000-0000-4000-8000-000000000000";
    const r = await client(server, bob.secret).post("/v1/tasks", { body: { prompt: "p", session_id: someId } });
    expect(r.status).toBe(404);
  });

  it("WatchTeam: malformed id INVALID_ARGUMENT, unknown NOT_FOUND, no key UNAUTHENTICATED, no tasks scope PERMISSION_DENIED", async () => {
    expect((await watchTeam(server.url, alice.secret, "nope"))?.code).toBe(Code.InvalidArgument);
    expect((await watchTeam(server.url, alice.secret, "00000000-0000-4000-8000-000000000000"))?.code).toBe(Code.NotFound);
    expect((await watchTeam(server.url, undefined, taskId))?.code).toBe(Code.Unauthenticated);
    expect((await watchTeam(server.url, sessionsOnly.secret, taskId))?.code).toBe(Code.PermissionDenied);
  });

  it("REST without the tasks scope is 403, without a key 401", async () => {
    expect((await client(server, sessionsOnly.secret).get("/v1/tasks")).status).toBe(403);
    expect((await client(server, sessionsOnly.secret).post("/v1/tasks", { body: { prompt: "p" } })).status).toBe(403);
    expect((await client(server).get(`/v1/tasks/${taskId}`)).status).toBe(401);
  });
});
