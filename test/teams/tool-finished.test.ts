// A worker's client-tool call, answered through the parent session's client, ends with
// ToolFinished{worker_id} on the parent session (session-behaviour.md §6, §7): every attached
// client sees the result, a timed-out call too.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGrpcJsClient, req, type RozGrpcJsClient, type SessionCall } from "../support/grpc-js-client.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { client } from "../rest/support.ts";
import { script, settledTask } from "./support.ts";

let server: TestServer;
let grpc: RozGrpcJsClient;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startServer({ ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
  grpc = createGrpcJsClient(server.url);
  api = client(server);
});
afterAll(async () => {
  grpc.close();
  await server.close();
});

const reader = script([[{ tool_call: { id: "r1", name: "read_file", arguments: { path: "notes.txt" } } }], [{ text: "I read the notes" }]]);

interface Finished {
  tool_call_id: string;
  tool_name: string;
  success: boolean;
  result: string;
  truncated: boolean;
  worker_id: string;
}

const nextFinished = async (call: SessionCall): Promise<Finished> =>
  (await call.responses.nextMatching((r) => r.response === "tool_finished", 10_000)).tool_finished as Finished;

async function session(timeoutMs = 10_000): Promise<{ call: SessionCall; watcher: SessionCall; sessionId: string }> {
  const call = grpc.openSession();
  call.send(req.start({ tools: [{ name: "read_file", description: "reads a file", timeout_ms: timeoutMs }] }));
  const sessionId = ((await call.next(10_000)).session_started as { session_id: string }).session_id;
  const watcher = grpc.openSession();
  watcher.send({ resume: { session_id: sessionId, after_seq: 1 } });
  watcher.send(req.ping());
  await watcher.responses.nextMatching((r) => r.response === "pong", 10_000);
  return { call, watcher, sessionId };
}

describe("a worker's forwarded calls", () => {
  it("the answer comes back to every client of the parent session as ToolFinished with worker_id", async () => {
    const { call, watcher, sessionId } = await session();
    const created = await api.post("/v1/tasks", { body: { prompt: reader, session_id: sessionId } });
    expect(created.status).toBe(201);
    const workerId = created.json.workers[0].id as string;
    const request = (await call.responses.nextMatching((r) => r.response === "tool_request", 10_000)).tool_request as { tool_call_id: string };
    call.send(req.toolResult(request.tool_call_id, "the notes say hello"));
    const expected = {
      tool_call_id: `${workerId}/r1`,
      tool_name: "read_file",
      success: true,
      result: "the notes say hello",
      truncated: false,
      worker_id: workerId,
    };
    expect(await nextFinished(watcher)).toEqual(expected);
    expect(await nextFinished(call)).toEqual(expected);
    expect((await settledTask(api.get, created.json.id)).workers[0]).toMatchObject({ status: "completed" });
    call.end();
    watcher.end();
    await Promise.all([call.status, watcher.status]);
  });

  it("a forwarded call nobody answers in time ends as ToolFinished{success:false} with the reason", async () => {
    const { call, watcher, sessionId } = await session(300);
    const created = await api.post("/v1/tasks", { body: { prompt: reader, session_id: sessionId } });
    const finished = await nextFinished(watcher);
    expect(finished).toMatchObject({ success: false, result: "tool timeout after 300ms", worker_id: created.json.workers[0].id });
    await settledTask(api.get, created.json.id);
    call.end();
    watcher.end();
    await Promise.all([call.status, watcher.status]);
  });
});
