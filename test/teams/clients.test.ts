// WatchTeam from other real clients: the buf CLI (gRPC over h2c) and Connect-Web's transport over HTTP/1.1 fetch.
import { ConnectError, createClient, Code } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService } from "../../src/gen/roz/v1/agent_pb.js";
import { startServer, type TestServer } from "../support/server.ts";
import { client } from "../rest/support.ts";
import { says, settledTask, watch } from "./support.ts";
import { bufCurl, bufCurlMessages } from "../support/buf-curl.ts";

let server: TestServer;
let taskId: string;
let expected: number;
beforeAll(async () => {
  server = await startServer();
  const api = client(server);
  const created = await api.post("/v1/tasks", { body: { prompt: "two", workers: [{ prompt: says("left") }, { prompt: says("right") }] } });
  taskId = created.json.id;
  await settledTask(api.get, taskId);
  const w = watch(server.url, taskId);
  expect(await w.done).toBeUndefined();
  expected = w.events.length;
});
afterAll(() => server.close());

describe("WatchTeam through other clients", () => {
  it("buf curl (gRPC, h2c prior knowledge, schema from reflection) prints the whole log and exits 0", async () => {
    const events = bufCurlMessages<{ seq: string; workerCompleted?: { result: string } }>(
      await bufCurl(["-d", JSON.stringify({ task_id: taskId }), `${server.url}/roz.v1.AgentService/WatchTeam`]),
    );
    expect(events.map((e) => Number(e.seq))).toEqual(Array.from({ length: expected }, (_, i) => i + 1));
    expect(events.flatMap((e) => (e.workerCompleted ? [e.workerCompleted.result] : [])).sort()).toEqual(["left", "right"]);
    const after = await bufCurl(["-d", JSON.stringify({ task_id: taskId, after_seq: expected - 1 }), `${server.url}/roz.v1.AgentService/WatchTeam`]);
    expect(JSON.parse(after)).toMatchObject({ seq: String(expected), workerExited: { parentTaskId: taskId } });
  });

  it("buf curl on an unknown task reports not_found", async () => {
    const failed = await bufCurl(["-d", '{"task_id":"00000000-0000-4000-8000-000000000000"}', `${server.url}/roz.v1.AgentService/WatchTeam`]).catch(
      (err: { stderr: string; code: number }) => err,
    );
    expect((failed as { stderr: string }).stderr).toMatch(/not_found/);
  });

  it.each([
    ["Connect", createConnectTransport],
    ["gRPC-Web", createGrpcWebTransport],
  ])("Connect-Web's %s transport (fetch, HTTP/1.1) streams the log and ends OK", async (_name, transport) => {
    const rpc = createClient(AgentService, transport({ baseUrl: server.url }));
    const seqs: number[] = [];
    for await (const e of rpc.watchTeam({ taskId })) seqs.push(Number(e.seq));
    expect(seqs).toEqual(Array.from({ length: expected }, (_, i) => i + 1));
    const err = await (async () => {
      for await (const _ of rpc.watchTeam({ taskId: "bad" })) void _;
    })().catch((e: unknown) => ConnectError.from(e));
    expect(err?.code).toBe(Code.InvalidArgument);
  });
});
