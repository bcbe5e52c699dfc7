// A process killed mid-task: at the next start its workers fail with timeout and the task ends, so watchers end.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { spawnServer, type SpawnedServer } from "../support/server.ts";
import { client } from "../rest/support.ts";
import { expectCompleteLog, script, watch } from "./support.ts";

const spawned: SpawnedServer[] = [];
let dataDir: string | undefined;
afterAll(async () => {
  await Promise.all(spawned.map((s) => s.dispose()));
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("restart mid-task", () => {
  it("after kill -9, the next process fails the running workers with timeout; GET and WatchTeam show the end", async () => {
    dataDir = await mkdtemp(join(tmpdir(), "roz-teams-restart-"));
    const first = await spawnServer({ ROZ_DATA_DIR: dataDir });
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

    const second = await spawnServer({ ROZ_DATA_DIR: dataDir });
    spawned.push(second);
    const task = (await client(second).get(`/v1/tasks/${created.json.id}`)).json;
    expect(task.status).toBe("completed");
    expect(task.workers.map((x: { status: string; failure?: string; result?: string }) => [x.status, x.failure ?? x.result])).toEqual([
      ["failed", "timeout"],
      ["completed", "quick"],
    ]);
    const after = watch(second.url, created.json.id);
    expect(await after.done).toBeUndefined();
    expectCompleteLog(after.events);
    expect(second.logLines().some((l) => String(l["msg"]).startsWith("ended tasks of a previous run"))).toBe(true);
  }, 60_000);
});
