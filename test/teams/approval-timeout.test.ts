// A worker's approval that nobody answers: the call is denied when the approval times out,
// and the team stream says how the wait ended (WorkerApprovalResolved{approved:false}).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGrpcJsClient, req, type RozGrpcJsClient } from "../support/grpc-js-client.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { client } from "../rest/support.ts";
import { script, settledTask, watch } from "./support.ts";

let server: TestServer;
let grpc: RozGrpcJsClient;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  const rules = JSON.stringify([{ tool_pattern: "arm_*", policy: "require_confirmation", reason: "moves hardware" }]);
  server = await startServer({ ROZ_PERMISSION_RULES: rules, ROZ_APPROVAL_TIMEOUT_MS: "300" });
  grpc = createGrpcJsClient(server.url);
  api = client(server);
});
afterAll(async () => {
  grpc.close();
  await server.close();
});

describe("a worker's approval that times out", () => {
  it("is resolved as not approved on the team stream, after it was requested", async () => {
    const call = grpc.openSession();
    call.send(req.start({ tools: [{ name: "arm_move", description: "moves the arm", category: "TOOL_CATEGORY_PURE" }] }));
    const started = await call.next(10_000);
    const sessionId = (started.session_started as { session_id: string }).session_id;
    const prompt = script([[{ tool_call: { id: "m1", name: "arm_move", arguments: {} } }], [{ text: "not allowed, then" }]]);
    const created = await api.post("/v1/tasks", { body: { prompt, session_id: sessionId } });
    expect(created.status).toBe(201);
    const watcher = watch(server.url, created.json.id);
    const resolved = await watcher.until((e) => e.event.case === "workerApprovalResolved", 15_000);
    const requested = watcher.events.find((e) => e.event.case === "workerApprovalRequested");
    if (requested?.event.case !== "workerApprovalRequested") throw new Error("no WorkerApprovalRequested before the resolution");
    expect(requested.event.value).toMatchObject({ toolName: "arm_move", reason: "moves hardware" });
    expect(resolved.event.value).toMatchObject({ approvalId: requested.event.value.approvalId, approved: false });
    expect(resolved.seq).toBeGreaterThan(requested.seq);
    const task = await settledTask(api.get, created.json.id);
    expect(task.workers[0]).toMatchObject({ status: "completed", result: "not allowed, then" });
    call.end();
    expect((await call.status).code).toBe(0);
  });
});
