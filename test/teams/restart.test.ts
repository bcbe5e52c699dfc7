// A process killed mid-task: at the next start its workers fail with timeout and the task ends, so watchers end.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { spawnServer, type SpawnedServer } from "../support/server.ts";
import { client } from "../rest/support.ts";
import { expectCompleteLog, script, watch } from "./support.ts";

const spawned: SpawnedServer[] = [];
let dataDir = "";
afterAll(async () => {
  await Promise.all(spawned.map((s) => s.dispose()));
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("restart mid-task", () => {
  /** Starts a task with a stuck and a quick worker on a first process and kills it once the quick one exited. */
  async function killedMidTask(env: Record<string, string>): Promise<string> {
    dataDir = await mkdtemp(join(tmpdir(), "roz-teams-restart-"));
    const first = await spawnServer({ ROZ_DATA_DIR: dataDir, ...env });
    spawned.push(first);
    const api1 = client(first);
    const created = await api1.post("/v1/tasks", {
      body: { prompt: "long", workers: [{ prompt: script([[{ delay_ms: 120_000 }]]) }, { prompt: script([[{ text: "quick" }]]) }] },
    });
    expect(created.status).toBe(201);
    const w = watch(first.url, created.json.id);
    await w.until((e) => e.event.case === "workerExited");
    await first.stop("SIGKILL");
    await w.done;
    return created.json.id as string;
  }

  it("after kill -9, the node restarted under the same id fails the running workers with timeout at once; GET and WatchTeam show the end", async () => {
    const taskId = await killedMidTask({ ROZ_NODE_ID: "teams-node" });
    const second = await spawnServer({ ROZ_DATA_DIR: dataDir, ROZ_NODE_ID: "teams-node" });
    spawned.push(second);
    await expectClosed(second, taskId);
    expect(second.logLines().some((l) => String(l["msg"]).startsWith("ended tasks of a previous run"))).toBe(true);
  }, 60_000);

  it("a task of a node that stopped heart-beating is closed by another node once that node's heartbeat expired", async () => {
    const env = { ROZ_NODE_HEARTBEAT_MS: "100", ROZ_NODE_EXPIRY_MS: "400" };
    const taskId = await killedMidTask({ ...env, ROZ_NODE_ID: "lost-node" });
    const other = await spawnServer({ ROZ_DATA_DIR: dataDir, ...env, ROZ_NODE_ID: "other-node" });
    spawned.push(other);
    await expect.poll(async () => (await client(other).get(`/v1/tasks/${taskId}`)).json.status, { timeout: 10_000, interval: 100 }).toBe("completed");
    await expectClosed(other, taskId);
  }, 60_000);

  async function expectClosed(second: SpawnedServer, taskId: string): Promise<void> {
    const task = (await client(second).get(`/v1/tasks/${taskId}`)).json;
    expect(task.status).toBe("completed");
    expect(task.workers.map((x: { status: string; failure?: string; result?: string }) => [x.status, x.failure ?? x.result])).toEqual([
      ["failed", "timeout"],
      ["completed", "quick"],
    ]);
    const after = watch(second.url, taskId);
    expect(await after.done).toBeUndefined();
    expectCompleteLog(after.events);
  }
});
