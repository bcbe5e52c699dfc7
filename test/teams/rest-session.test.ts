// A REST task that borrows a live session's client tools, attached and detached.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGrpcJsClient, req, type RozGrpcJsClient } from "../support/grpc-js-client.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { client } from "../rest/support.ts";
import { script, settledTask } from "./support.ts";

let server: TestServer;
let grpc: RozGrpcJsClient;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startServer();
  grpc = createGrpcJsClient(server.url);
  api = client(server);
});
afterAll(async () => {
  grpc.close();
  await server.close();
});

const readFile = { name: "read_file", description: "reads a file", category: "TOOL_CATEGORY_PURE", timeout_ms: 500 };
const reader = script([[{ tool_call: { id: "r1", name: "read_file", arguments: { path: "notes.txt" } } }], [{ text: "I read the notes" }]]);

/** The stored transcript of a task's first worker, as text. */
async function transcriptOf(taskId: string): Promise<string> {
  const tenant = await server.app.store.ensureTenant("default");
  const [worker] = (await server.app.store.listWorkers(tenant.id, taskId))!;
  return JSON.stringify(worker!.transcript);
}

async function startedSession() {
  const call = grpc.openSession();
  call.send(req.start({ tools: [readFile] }));
  const started = await call.next(10_000);
  return { call, sessionId: (started.session_started as { session_id: string }).session_id };
}

describe("POST /v1/tasks with session_id", () => {
  it("the workers' client-tool calls go to the session's client as ToolRequest{worker_id}; the answer reaches the worker", async () => {
    const { call, sessionId } = await startedSession();
    const created = await api.post("/v1/tasks", { body: { prompt: reader, session_id: sessionId } });
    expect(created.status).toBe(201);
    const request = await call.responses.nextMatching((r) => r.response === "tool_request", 10_000);
    const tr = request.tool_request as { tool_call_id: string; tool_name: string; worker_id: string; parameters: { fields: Record<string, unknown> } };
    expect(tr.worker_id).toBe(created.json.workers[0].id);
    expect(tr.tool_call_id).toBe(`${tr.worker_id}/r1`);
    call.send(req.toolResult(tr.tool_call_id, "the notes say hello"));
    const task = await settledTask(api.get, created.json.id);
    expect(task.workers[0]).toMatchObject({ status: "completed", result: "I read the notes" });
    expect(await transcriptOf(created.json.id)).toContain("the notes say hello");
    // The same id again is no longer waited for.
    call.send(req.toolResult(tr.tool_call_id, "late"));
    const late = await call.responses.nextMatching((r) => r.response === "error", 10_000);
    expect((late.error as { code: string }).code).toMatch(/no_active_turn|unknown_tool_call/);
    call.end();
    expect((await call.status).code).toBe(0);
  });

  it("while the session is detached the call waits, and the tool timeout applies", async () => {
    const { call, sessionId } = await startedSession();
    call.cancel();
    await call.status;
    const created = await api.post("/v1/tasks", { body: { prompt: reader, session_id: sessionId } });
    expect(created.status).toBe(201);
    const task = await settledTask(api.get, created.json.id);
    expect(task.workers[0]).toMatchObject({ status: "completed", result: "I read the notes" });
    expect(await transcriptOf(created.json.id)).toContain("tool timeout after 500ms");
  });

  it("a session that is not live: 409; unknown: 404", async () => {
    const { call, sessionId } = await startedSession();
    call.end();
    await call.status;
    expect((await api.post("/v1/tasks", { body: { prompt: "p", session_id: sessionId } })).status).toBe(409);
    expect((await api.post("/v1/tasks", { body: { prompt: "p", session_id: "00000000-0000-4000-8000-000000000000" } })).status).toBe(404);
  });
});
