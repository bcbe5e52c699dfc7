import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../support/server.ts";
import { client } from "../rest/support.ts";
import { expectCompleteLog, says, settledTask, watch } from "./support.ts";

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startServer();
  api = client(server);
});
afterAll(() => server.close());

describe("REST tasks without a session", () => {
  it("one worker runs the prompt; GET shows its text result and the usage; a late WatchTeam gets the whole log then OK", async () => {
    const created = await api.post("/v1/tasks", { body: { prompt: says("the answer is 42") } });
    expect(created.status).toBe(201);
    expect(created.json.workers).toHaveLength(1);
    const task = await settledTask(api.get, created.json.id);
    expect(task.status).toBe("completed");
    expect(task.workers[0]).toMatchObject({ index: 1, status: "completed", result: "the answer is 42", mode: "react", model: "scripted/default" });
    expect(task.usage).toMatchObject({ input_tokens: 10, output_tokens: 3 });
    const w = watch(server.url, task.id);
    expect(await w.done).toBeUndefined();
    expectCompleteLog(w.events);
    expect(w.events.map((e) => e.event.case)).toEqual(["workerStarted", "workerPhase", "workerCompleted", "workerExited"]);
    expect(task.last_seq).toBe(4);
  });

  it("several workers (one OODA): results per worker, usage summed, one gap-free order across workers", async () => {
    const created = await api.post("/v1/tasks", {
      body: {
        prompt: "split",
        workers: [{ prompt: says("one") }, { prompt: says("two"), mode: "ooda_re_act" }, { prompt: says("three") }],
      },
    });
    expect(created.status).toBe(201);
    const live = watch(server.url, created.json.id);
    const task = await settledTask(api.get, created.json.id);
    expect(task.workers.map((w: any) => [w.index, w.status, w.result, w.mode])).toEqual([
      [1, "completed", "one", "react"],
      [2, "completed", "two", "ooda_re_act"],
      [3, "completed", "three", "react"],
    ]);
    expect(task.usage).toMatchObject({ input_tokens: 30, output_tokens: 9 });
    expect(await live.done).toBeUndefined();
    expectCompleteLog(live.events);
    expect(live.events).toHaveLength(12);
    const phase = live.events.find((e) => e.event.case === "workerPhase" && e.event.value.workerId === task.workers[1].id);
    expect(phase?.event.value).toMatchObject({ mode: "ooda_re_act", phase: 1 });
    const list = await api.get("/v1/tasks?status=completed&limit=1");
    expect(list.status).toBe(200);
    expect(list.json.items).toHaveLength(1);
    expect(list.json.next_cursor).toEqual(expect.any(String));
  });

  it("a failing model call fails the worker with model_error", async () => {
    const created = await api.post("/v1/tasks", { body: { prompt: `script: ${JSON.stringify({ responses: [[{ error: "boom" }]] })}` } });
    const task = await settledTask(api.get, created.json.id);
    expect(task.workers[0]).toMatchObject({ status: "failed", failure: "model_error" });
    expect(task.status).toBe("completed");
  });
});
