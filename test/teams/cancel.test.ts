// Cancelling workers: DELETE /v1/tasks, the parent session ending, the worker time limit, a denied physical tool.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai/index.ts";
import { createGrpcJsClient, req, type RozGrpcJsClient } from "../support/grpc-js-client.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { client } from "../rest/support.ts";
import { expectCompleteLog, script, settledTask, teamsEnvironment, watch } from "./support.ts";

let fake: FakeOpenAI;
let server: TestServer;
let grpc: RozGrpcJsClient;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  // Every provider call hangs after its headers until the client aborts it.
  fake = await startFakeOpenAI({ defaultReply: { stall: true } });
  server = await startServer({
    OPENAI_BASE_URL: fake.baseURL,
    OPENAI_API_KEY: "sk-test",
    ROZ_OPENAI_API: "chat",
    ROZ_DEFAULT_MODEL: "scripted/default",
  });
  grpc = createGrpcJsClient(server.url);
  api = client(server);
});
afterAll(async () => {
  grpc.close();
  await server.close();
  await fake.close();
});

const waitFor = async (check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

/** Failure reasons per worker, from a complete log. */
const failures = (events: Awaited<ReturnType<typeof watch>>["events"]) =>
  events.filter((e) => e.event.case === "workerFailed").map((e) => (e.event.value as { reason: string }).reason);

describe("cancelling a task", () => {
  it.each(["cancelled", "e_stop"])(
    "DELETE /v1/tasks/{id} (reason %s) mid-run aborts the provider requests; every worker fails, then exits; WatchTeam ends OK",
    async (reason) => {
      const before = fake.requests.length;
      const created = await api.post("/v1/tasks", {
        body: { prompt: "hang", model: "openai/fake-model", workers: [{ prompt: "one" }, { prompt: "two" }, { prompt: "three" }] },
      });
      expect(created.status).toBe(201);
      const w = watch(server.url, created.json.id);
      await waitFor(() => fake.requests.length >= before + 3, "three provider requests");
      const mine = fake.requests.slice(before);
      const deleted = await api.delete(`/v1/tasks/${created.json.id}${reason === "e_stop" ? "?reason=e_stop" : ""}`);
      expect(deleted.status).toBe(200);
      expect(deleted.json.status).toBe("cancelled");
      expect(deleted.json.workers.map((x: { status: string; failure: string }) => [x.status, x.failure])).toEqual(Array(3).fill(["failed", reason]));
      await Promise.all(mine.map((r) => r.closed));
      expect(mine.map((r) => r.aborted)).toEqual([true, true, true]);
      expect(await w.done).toBeUndefined();
      expectCompleteLog(w.events);
      expect(failures(w.events)).toEqual([reason, reason, reason]);
      // Cancelling again is harmless; an unknown task is a 404.
      expect((await api.delete(`/v1/tasks/${created.json.id}`)).status).toBe(200);
      expect((await api.delete("/v1/tasks/00000000-0000-4000-8000-000000000000")).status).toBe(404);
    },
  );

  it("a worker over its time limit (ROZ_WORKER_TIMEOUT_MS) fails with timeout", async () => {
    const limited = await startServer({ ROZ_WORKER_TIMEOUT_MS: "300" });
    try {
      const api = client(limited);
      const created = await api.post("/v1/tasks", { body: { prompt: script([[{ delay_ms: 60_000 }, { text: "too late" }]]) } });
      const task = await settledTask(api.get, created.json.id);
      expect(task.workers[0]).toMatchObject({ status: "failed", failure: "timeout" });
    } finally {
      await limited.close();
    }
  });

  it("a worker whose call to a physical tool the rules deny fails with safety_violation", async () => {
    const env = await api.post("/v1/environments", {
      body: { name: `deny-${Date.now()}`, permissions: [{ tool_pattern: "move_arm", policy: "deny" }], teams: { enabled: true } },
    });
    const call = grpc.openSession();
    call.send(req.start({ environment_id: env.json.id, tools: [{ name: "move_arm", description: "moves the arm", category: "TOOL_CATEGORY_PHYSICAL" }] }));
    await call.next(10_000);
    const worker = script([[{ tool_call: { name: "move_arm", arguments: {} } }], [{ text: "moved?" }]]);
    call.send(
      req.userMessage(
        script([
          [{ tool_call: { name: "spawn_worker", arguments: { prompt: worker } } }],
          [{ tool_call: { name: "wait_for_workers", arguments: {} } }],
          [{ text: "done" }],
        ]),
      ),
    );
    let taskId = "";
    for (;;) {
      const r = await call.next(20_000);
      expect(r.response).not.toBe("tool_request");
      if (r.response === "team_started") taskId = (r.team_started as { task_id: string }).task_id;
      if (r.response === "turn_complete") break;
    }
    call.end();
    await call.status;
    const task = await settledTask(api.get, taskId);
    expect(task.workers[0]).toMatchObject({ status: "failed", failure: "safety_violation" });
  });
});

describe("the parent session ending", () => {
  it.each([
    { reason: "user went away", failure: "cancelled" },
    { reason: "e_stop", failure: "e_stop" },
  ])("cancel_session($reason) with workers running: they fail with $failure (provider calls aborted) and the task ends", async ({ reason, failure }) => {
    const before = fake.requests.length;
    const call = grpc.openSession();
    call.send(req.start({ environment_id: await teamsEnvironment(api) }));
    await call.next(10_000);
    call.send(
      req.userMessage(
        script([
          [
            { tool_call: { name: "spawn_worker", arguments: { prompt: "hang a", model: "openai/fake-model" } } },
            { tool_call: { name: "spawn_worker", arguments: { prompt: script([[{ delay_ms: 60_000 }]]) } } },
          ],
          [{ tool_call: { name: "wait_for_workers", arguments: {} } }],
        ]),
      ),
    );
    let taskId = "";
    while (taskId === "") {
      const r = await call.next(20_000);
      if (r.response === "team_started") taskId = (r.team_started as { task_id: string }).task_id;
    }
    const w = watch(server.url, taskId);
    await waitFor(() => fake.requests.length > before, "the provider request");
    await w.until((e) => e.event.case === "workerPhase" && e.seq > 3n);
    call.send(req.cancelSession(reason));
    expect((await call.status).code).toBe(0);
    expect(await w.done).toBeUndefined();
    expectCompleteLog(w.events);
    expect(failures(w.events)).toEqual([failure, failure]);
    await fake.requests[before]!.closed;
    expect(fake.requests[before]!.aborted).toBe(true);
    expect((await api.get(`/v1/tasks/${taskId}`)).json.status).toBe("cancelled");
  });
});

describe("shutdown", () => {
  it("a watcher of a running task gets a retryable UNAVAILABLE once the shutdown grace period is over", async () => {
    const own = await startServer({ ROZ_SHUTDOWN_GRACE_MS: "300" });
    const created = await client(own).post("/v1/tasks", { body: { prompt: script([[{ delay_ms: 60_000 }]]) } });
    const w = watch(own.url, created.json.id);
    await w.until((e) => e.event.case === "workerPhase");
    await own.close();
    expect((await w.done)?.code).toBe(Code.Unavailable);
  });
});
