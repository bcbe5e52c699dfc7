// A session's agent spawns workers (session-behaviour.md §7), driven through a real grpc-js client.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai/index.ts";
import { createGrpcJsClient, req, type RozGrpcJsClient, type SessionCall, type WireResponse } from "../support/grpc-js-client.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { client } from "../rest/support.ts";
import { expectCompleteLog, says, script, watch, workerOf, type Watch } from "./support.ts";

let fake: FakeOpenAI;
let server: TestServer;
let grpc: RozGrpcJsClient;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  fake = await startFakeOpenAI({ defaultReply: { status: 500, retryAfter: 0, message: "the fake provider is down" } });
  server = await startServer({ OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: "sk-test", ROZ_OPENAI_API: "chat", ROZ_DEFAULT_MODEL: "scripted/default" });
  grpc = createGrpcJsClient(server.url);
  api = client(server);
});
afterAll(async () => {
  grpc.close();
  await server.close();
  await fake.close();
});

const physicalTool = (name: string) => ({ name, description: `test tool ${name}`, category: "TOOL_CATEGORY_PHYSICAL" });

/** A session in an environment where `write_file` needs approval. */
async function openSession(): Promise<SessionCall> {
  const env = await api.post("/v1/environments", {
    body: {
      name: `team-${Date.now()}-${Math.random()}`,
      permissions: [{ tool_pattern: "write_file", policy: "require_confirmation", reason: "writes need a human" }],
      teams: { enabled: true },
    },
  });
  expect(env.status).toBe(201);
  const call = grpc.openSession();
  call.send(req.start({ environment_id: env.json.id, tools: [physicalTool("read_file"), physicalTool("write_file")] }));
  expect((await call.next(10_000)).response).toBe("session_started");
  return call;
}

/** The tenant of an open server (ROZ_AUTH=disabled). */
const openTenant = () => server.app.store.ensureTenant("default");

const spawn = (id: string, args: Record<string, unknown>) => ({ tool_call: { id, name: "spawn_worker", arguments: args } });

describe("a session spawns workers", () => {
  it("three workers (one OODA): client tools through the session's client (one approved), one model_error; watchers before, in the middle and after all see the same log and end OK", async () => {
    const call = await openSession();
    const workerA = script([[{ tool_call: { id: "a1", name: "read_file", arguments: { path: "a.txt" } } }], [{ text: "A read the file" }]]);
    const workerB = script([[{ tool_call: { id: "b1", name: "write_file", arguments: { path: "b.txt" } } }], [{ text: "B wrote the file" }]]);
    call.send(
      req.userMessage(
        script([
          [
            spawn("s1", { prompt: workerA }),
            spawn("s2", { prompt: workerB, mode: "ooda_re_act" }),
            spawn("s3", { prompt: "please fail", model: "openai/fake-model", tools: "none" }),
          ],
          [{ tool_call: { id: "w1", name: "wait_for_workers", arguments: {} } }],
          [{ text: "all workers are done" }],
        ]),
      ),
    );

    let taskId: string | undefined;
    let first: Watch | undefined;
    const seen: WireResponse[] = [];
    const workerRequests: WireResponse[] = [];
    for (;;) {
      const r = await call.next(20_000);
      seen.push(r);
      if (r.response === "team_started") {
        taskId = (r.team_started as { task_id: string }).task_id;
        first = watch(server.url, taskId);
      } else if (r.response === "tool_request") {
        const request = r.tool_request as { tool_call_id: string; tool_name: string; worker_id: string };
        workerRequests.push(r);
        call.send(req.toolResult(request.tool_call_id, `contents for ${request.tool_name}`));
      } else if (r.response === "activity_update" && (r.activity_update as { state: string }).state === "waiting_approval") {
        const activity = r.activity_update as { detail: string; approval: { tool_name: string; reason: string } };
        expect(activity.approval).toMatchObject({ tool_name: "write_file", reason: "writes need a human" });
        call.send({ permission_decision: { tool_call_id: activity.detail, approved: true } });
      } else if (r.response === "turn_complete") break;
    }
    expect(taskId).toBeDefined();
    expect(seen.filter((r) => r.response === "team_started")).toHaveLength(1);
    // The team tools ran on the server: only the workers' client tools reached the client.
    expect(workerRequests.map((r) => (r.tool_request as { tool_name: string }).tool_name).sort()).toEqual(["read_file", "write_file"]);
    for (const r of workerRequests) expect((r.tool_request as { worker_id: string }).worker_id).not.toBe("");
    const calling = seen.filter((r) => r.response === "activity_update" && (r.activity_update as { state: string }).state === "calling_tool");
    expect(calling.map((r) => (r.activity_update as { detail: string }).detail)).toEqual(expect.arrayContaining(["spawn_worker", "wait_for_workers"]));
    expect((seen.at(-1)!.turn_complete as { stop_reason: string }).stop_reason).toBe("end_turn");

    // The middle watcher starts after a few events of the first.
    await first!.until((e) => Number(e.seq) >= 3);
    const afterSeq = first!.events[2]!.seq;
    const middle = watch(server.url, taskId!, { afterSeq });
    call.end();
    expect((await call.status).code).toBe(0);
    expect(await first!.done).toBeUndefined();
    expect(await middle.done).toBeUndefined();
    const late = watch(server.url, taskId!);
    expect(await late.done).toBeUndefined();

    expectCompleteLog(first!.events);
    expect(late.events).toEqual(first!.events);
    expect(middle.events).toEqual(first!.events.filter((e) => e.seq > afterSeq));

    const events = first!.events;
    const task = (await api.get(`/v1/tasks/${taskId}`)).json;
    expect(task.status).toBe("completed");
    const [a, b, c] = task.workers;
    expect([a.status, a.result]).toEqual(["completed", "A read the file"]);
    expect([b.status, b.result, b.mode]).toEqual(["completed", "B wrote the file", "ooda_re_act"]);
    expect([c.status, c.failure, c.model]).toEqual(["failed", "model_error", "openai/fake-model"]);
    const of = (id: string) => events.filter((e) => workerOf(e) === id).map((e) => e.event.case);
    expect(of(a.id)).toEqual(["workerStarted", "workerPhase", "workerToolCall", "workerPhase", "workerCompleted", "workerExited"]);
    expect(of(b.id)).toEqual([
      "workerStarted",
      "workerPhase",
      "workerApprovalRequested",
      "workerApprovalResolved",
      "workerToolCall",
      "workerPhase",
      "workerCompleted",
      "workerExited",
    ]);
    expect(of(c.id)).toEqual(["workerStarted", "workerPhase", "workerFailed", "workerExited"]);
    const approval = events.find((e) => e.event.case === "workerApprovalRequested")!.event.value as { approvalId: string; toolName: string; taskId: string };
    expect(approval).toMatchObject({ toolName: "write_file", taskId });
    expect(events.find((e) => e.event.case === "workerApprovalResolved")!.event.value).toMatchObject({ approvalId: approval.approvalId, approved: true });
    expect(events.find((e) => e.event.case === "workerPhase" && workerOf(e) === b.id)!.event.value).toMatchObject({ mode: "ooda_re_act" });
    expect(events.find((e) => e.event.case === "workerExited")!.event.value).toMatchObject({ parentTaskId: taskId });
    // The worker's first user message is its prompt exactly as given.
    const providerCall = fake.requests.find((r) => r.body?.messages?.some((m: { content: unknown }) => m.content === "please fail"));
    expect(providerCall).toBeDefined();
  }, 60_000);

  it("the session's wait_for_workers gets each worker's result; a worker cannot spawn (depth limit) and says so", async () => {
    const call = await openSession();
    const spawner = script([[spawn("x1", { prompt: says("nested") })], [{ text: "tried" }]]);
    call.send(
      req.userMessage(
        script([
          [spawn("s1", { prompt: spawner, tools: [] })],
          [{ tool_call: { id: "w1", name: "wait_for_workers", arguments: { timeout_ms: 20_000 } } }],
          [{ text: "ok" }],
        ]),
      ),
    );
    let taskId = "";
    for (;;) {
      const r = await call.next(20_000);
      if (r.response === "team_started") taskId = (r.team_started as { task_id: string }).task_id;
      if (r.response === "turn_complete") break;
    }
    call.end();
    expect((await call.status).code).toBe(0);
    const w = watch(server.url, taskId);
    expect(await w.done).toBeUndefined();
    const messages = await api.get(`/v1/sessions/${(await api.get(`/v1/tasks/${taskId}`)).json.session_id}/messages?format=turns`);
    const calls = messages.json.turns[0].tool_calls as { name: string; result: string }[];
    const waited = JSON.parse(calls.find((c) => c.name === "wait_for_workers")!.result);
    expect(waited.workers).toEqual([{ worker_id: expect.any(String), status: "completed", result: "tried" }]);
    const task = (await api.get(`/v1/tasks/${taskId}`)).json;
    expect(task.workers).toHaveLength(1);
    // What the worker's spawn_worker call answered, from its stored transcript.
    const [stored] = (await server.app.store.listWorkers((await openTenant()).id, taskId))!;
    expect(JSON.stringify(stored!.transcript)).toContain("resource_exhausted: workers at depth 1 may not spawn workers");
  }, 60_000);
});
