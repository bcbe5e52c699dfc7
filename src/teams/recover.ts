import type { TeamsDeps } from "./ports.ts";
import { TaskLog } from "./task-log.ts";

/**
 * Closes the tasks whose node is gone (a previous run of this process, or a lost node: no
 * heartbeat within `nodeExpiryMs`): one node claims each (compare-and-set, so exactly one
 * closes it), its running workers fail with `timeout` and exit, and the task ends, so its
 * watchers on every node end too. `previousRun` adds this node id's own tasks, left by its
 * previous process; `isLive` skips the tasks this process runs. Returns how many were closed.
 */
export async function recoverOrphanedTasks(deps: TeamsDeps, isLive: (taskId: string) => boolean, previousRun: boolean): Promise<number> {
  const orphaned = await deps.store.orphanedTasks(Date.now() - deps.nodeExpiryMs);
  const own = previousRun ? await deps.store.runningTasks(deps.nodeId) : [];
  const tasks = [...own, ...orphaned.filter((t) => !own.some((o) => o.id === t.id))];
  let closed = 0;
  for (const task of tasks) {
    if (isLive(task.id)) continue;
    if (!(await deps.store.claimTask(task.tenantId, task.id, { fromNode: task.nodeId, toNode: deps.nodeId }))) continue;
    const log = new TaskLog(task, deps);
    for (const w of (await deps.store.listWorkers(task.tenantId, task.id)) ?? []) {
      if (w.status !== "running") continue;
      void log.append({ type: "worker_failed", workerId: w.id, reason: "timeout" });
      await deps.store.endWorker(task.tenantId, task.id, w.id, { status: "failed", failure: "timeout", usage: w.usage });
      void log.append({ type: "worker_exited", workerId: w.id, parentTaskId: task.id });
    }
    await log.end("completed");
    closed++;
  }
  return closed;
}
