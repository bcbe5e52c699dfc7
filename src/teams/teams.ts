import { randomUUID } from "node:crypto";
import type { PermissionRule } from "../agent/index.ts";
import { RozError } from "../errors/index.ts";
import type { Environment, Page, Task, TaskFilter, Worker } from "../store/index.ts";
import type { ParentSession, TeamsDeps } from "./ports.ts";
import { recoverOrphanedTasks } from "./recover.ts";
import { TaskLog } from "./task-log.ts";
import { TaskRun } from "./task-run.ts";
import { teamTools, type TeamToolHost } from "./team-tools.ts";
import type { WorkerFailure, WorkerRequest } from "./types.ts";
import { watchTask } from "./watch.ts";
import { chooseTools, WorkerRun } from "./worker.ts";

/** A task with its workers, as REST shows it. */
export interface TaskView {
  task: Task;
  workers: Worker[];
}

/** `POST /v1/tasks`. */
export interface NewTaskRequest {
  prompt: string;
  environmentId?: string;
  model?: string;
  sessionId?: string;
  workers?: WorkerRequest[];
}

/** What a started session gets: the team tools, and the hook that ends its task with it. */
export interface SessionTeam {
  serverTools: ReturnType<typeof teamTools>;
  ended(status: string, reason: string): void;
}

/** The reason a session's end gives its workers: `e_stop` when the client said so. */
const failureOfSessionEnd = (reason: string): WorkerFailure => (reason.trim().toLowerCase() === "e_stop" ? "e_stop" : "cancelled");

/**
 * Tasks and their workers on this node (session-behaviour.md §7): spawning with limits,
 * cancelling, watching, and failing at startup what a previous process left running.
 */
export class Teams {
  readonly #deps: TeamsDeps;
  readonly #live = new Map<string, TaskRun>();
  /** Live parent sessions by id, for REST tasks that use a session's client tools. */
  readonly #parents = new Map<string, ParentSession>();
  /** Running (or starting) workers per tenant. */
  readonly #running = new Map<string, number>();

  constructor(deps: TeamsDeps) {
    this.#deps = deps;
  }

  /** Team tools for a started session; its workers share one task, created on the first spawn. */
  attachSession(parent: ParentSession): SessionTeam {
    this.#parents.set(parent.sessionId, parent);
    let run: Promise<TaskRun> | undefined;
    let ended = false;
    const spawned: string[] = [];
    const taskRun = (prompt: string): Promise<TaskRun> =>
      (run ??= (async () => {
        const environment = await this.#environment(parent.tenantId, parent.environmentId);
        const created = await this.#startTask(parent.tenantId, { prompt, sessionId: parent.sessionId }, environment, parent);
        parent.teamStarted(created.task.id);
        return created;
      })().catch((err: unknown) => {
        run = undefined;
        throw err;
      }));
    const host: TeamToolHost = {
      spawn: async (request) => {
        if (ended) throw new RozError("conflict", "the session has ended: it takes no more workers");
        this.#checkTenant(parent.tenantId, 1);
        const r = await taskRun(request.prompt);
        const worker = await this.#spawn(r, request, 1);
        spawned.push(worker.spec.id);
        return { workerId: worker.spec.id, taskId: r.task.id };
      },
      wait: async (ids, timeoutMs, signal) => {
        const r = run ? await run : undefined;
        if (!r) {
          if (ids !== undefined && ids.length > 0) throw new RozError("not_found", "this session has spawned no workers");
          return [];
        }
        return r.wait(ids ?? spawned, timeoutMs, signal);
      },
    };
    return {
      serverTools: teamTools(host),
      ended: (_status, reason) => {
        ended = true;
        if (this.#parents.get(parent.sessionId) === parent) this.#parents.delete(parent.sessionId);
        void run?.then(
          (r) => {
            // Workers of an ended session cannot reach its client: they stop, and the task ends.
            if ([...r.workers.values()].some((w) => w.ending === undefined)) r.cancel(failureOfSessionEnd(reason));
            else r.close();
          },
          () => {},
        );
      },
    };
  }

  /** Creates a task and starts its workers (one with the prompt when none are given). */
  async createTask(tenantId: string, input: NewTaskRequest): Promise<TaskView> {
    const requests = input.workers && input.workers.length > 0 ? input.workers : [{ prompt: input.prompt }];
    if (requests.length > this.#deps.limits.workersPerTask) {
      throw new RozError("task_worker_limit", `a task may have at most ${this.#deps.limits.workersPerTask} workers (asked for ${requests.length})`);
    }
    this.#checkTenant(tenantId, requests.length);
    const environment = await this.#environment(tenantId, input.environmentId ?? "");
    let parent: ParentSession | undefined;
    if (input.sessionId !== undefined) {
      parent = this.#parents.get(input.sessionId);
      if (parent === undefined || parent.tenantId !== tenantId) {
        parent = undefined;
        const stored = await this.#deps.store.getSession(tenantId, input.sessionId);
        if (!stored) throw new RozError("not_found", `session "${input.sessionId}" not found`);
        throw new RozError("conflict", `session "${input.sessionId}" is not running on this server: its client cannot run tools`);
      }
    }
    // Refuse before anything is created.
    for (const r of requests) this.#model(r.model ?? input.model, environment, parent);
    const run = await this.#startTask(
      tenantId,
      { prompt: input.prompt, ...(input.sessionId ? { sessionId: input.sessionId } : {}), ...(input.model ? { model: input.model } : {}) },
      environment,
      parent,
    );
    try {
      for (const r of requests) await this.#spawn(run, { ...r, model: r.model ?? input.model }, 1);
    } finally {
      run.close();
    }
    return (await this.getTask(tenantId, run.task.id))!;
  }

  async getTask(tenantId: string, taskId: string): Promise<TaskView | undefined> {
    const task = await this.#deps.store.getTask(tenantId, taskId);
    if (!task) return undefined;
    return { task, workers: (await this.#deps.store.listWorkers(tenantId, taskId)) ?? [] };
  }

  listTasks(tenantId: string, filter: TaskFilter): Promise<Page<Task>> {
    return this.#deps.store.listTasks(tenantId, filter);
  }

  /** Cancels a task: its running workers fail with `reason` and exit; resolves once it has ended. */
  async cancelTask(tenantId: string, taskId: string, reason: "cancelled" | "e_stop"): Promise<TaskView | undefined> {
    const task = await this.#deps.store.getTask(tenantId, taskId);
    if (!task) return undefined;
    const run = this.#live.get(taskId);
    if (run) {
      run.cancel(reason);
      await run.finished;
    }
    return this.getTask(tenantId, taskId);
  }

  /** The watcher's stream of stored `TeamEvent` bytes (see `watchTask`). */
  watch(tenantId: string, taskId: string, afterSeq: number, signal: AbortSignal): Promise<AsyncIterable<Uint8Array>> {
    return watchTask(this.#deps, tenantId, taskId, afterSeq, signal);
  }

  /**
   * Tasks whose node is gone cannot continue: they are closed (see `recoverOrphanedTasks`).
   * Runs at startup (`previousRun`: also this node id's own tasks, left by its previous
   * process) and with every heartbeat. Returns how many tasks were closed.
   */
  recover(previousRun = false): Promise<number> {
    return recoverOrphanedTasks(this.#deps, (taskId) => this.#live.has(taskId), previousRun);
  }

  /** Shutdown: every running task is cancelled; resolves when all have ended. */
  async close(): Promise<void> {
    const runs = [...this.#live.values()];
    for (const run of runs) run.cancel("cancelled");
    await Promise.all(runs.map((r) => r.finished));
  }

  /** Tasks running on this node (tests and metrics). */
  get liveTasks(): number {
    return this.#live.size;
  }

  async #environment(tenantId: string, environmentId: string): Promise<Environment> {
    const env = environmentId === "" ? await this.#deps.store.getDefaultEnvironment(tenantId) : await this.#deps.store.getEnvironment(tenantId, environmentId);
    if (!env) throw new RozError("not_found", `environment "${environmentId}" not found`);
    return env;
  }

  async #startTask(
    tenantId: string,
    input: { prompt: string; sessionId?: string; model?: string },
    environment: Environment,
    parent: ParentSession | undefined,
  ): Promise<TaskRun> {
    const task = await this.#deps.store.createTask(tenantId, {
      id: randomUUID(),
      environmentId: environment.id,
      prompt: input.prompt,
      ...(input.sessionId ? { sessionId: input.sessionId } : {}),
      ...(input.model ? { model: input.model } : {}),
      nodeId: this.#deps.nodeId,
    });
    const run = new TaskRun({
      task,
      log: new TaskLog(task, this.#deps),
      environment,
      ...(parent ? { parent } : {}),
      onFinished: (r) => this.#live.delete(r.task.id),
    });
    this.#live.set(task.id, run);
    return run;
  }

  #checkTenant(tenantId: string, adding: number): void {
    const running = this.#running.get(tenantId) ?? 0;
    const max = this.#deps.limits.runningWorkersPerTenant;
    if (running + adding > max) throw new RozError("tenant_worker_limit", `at most ${max} workers may run at once per tenant (${running} running)`);
  }

  #model(wanted: string | undefined, environment: Environment, parent: ParentSession | undefined) {
    const name = wanted || parent?.model || environment.defaultModel || undefined;
    const model = this.#deps.models.resolve(name);
    if (!model) throw new RozError("model_unavailable", `model "${name}" is not configured on this server`);
    return model;
  }

  /** Starts one worker at `depth` in `run`, within the limits. */
  async #spawn(run: TaskRun, request: WorkerRequest, depth: number): Promise<WorkerRun> {
    const { limits } = this.#deps;
    const tenantId = run.task.tenantId;
    if (!run.open) throw new RozError("conflict", `task "${run.task.id}" takes no more workers`);
    if (depth > limits.maxSpawnDepth) {
      throw new RozError("spawn_depth_limit", `workers at depth ${depth - 1} may not spawn workers (ROZ_TEAM_MAX_SPAWN_DEPTH is ${limits.maxSpawnDepth})`);
    }
    if (run.size >= limits.workersPerTask) throw new RozError("task_worker_limit", `a task may have at most ${limits.workersPerTask} workers`);
    this.#checkTenant(tenantId, 1);
    const model = this.#model(request.model, run.environment, run.parent);
    const tools = chooseTools(request.tools, run.parent?.clientTools() ?? []);
    const mode = request.mode ?? "react";
    const permissions: PermissionRule[] = run.parent?.permissions() ?? [...run.environment.permissions, ...this.#deps.defaultPermissions];
    const release = run.reserve();
    this.#running.set(tenantId, (this.#running.get(tenantId) ?? 0) + 1);
    const releaseTenant = (): void => {
      this.#running.set(tenantId, (this.#running.get(tenantId) ?? 1) - 1);
    };
    try {
      const stored = await this.#deps.store.addWorker(tenantId, run.task.id, { prompt: request.prompt, mode, model: model.name, depth });
      if (!stored) throw new RozError("not_found", `task "${run.task.id}" not found`);
      const spawned: string[] = [];
      const host: TeamToolHost = {
        spawn: async (r) => {
          const child = await this.#spawn(run, r, depth + 1);
          spawned.push(child.spec.id);
          return { workerId: child.spec.id, taskId: run.task.id };
        },
        wait: (ids, timeoutMs, signal) => run.wait(ids ?? spawned, timeoutMs, signal),
      };
      const worker = new WorkerRun(
        {
          id: stored.id,
          taskId: run.task.id,
          tenantId,
          prompt: request.prompt,
          mode,
          model,
          depth,
          tools,
          permissions,
          ...(run.environment.instructions ? { instructions: run.environment.instructions } : {}),
          ...(run.parent ? { parent: run.parent } : {}),
          serverTools: teamTools(host),
          ...(this.#deps.liveTools ? { liveTools: this.#deps.liveTools(tenantId, run.parent?.sessionId) } : {}),
        },
        run.log,
        this.#deps,
      );
      run.add(worker);
      void worker.done.finally(releaseTenant);
      return worker;
    } catch (err) {
      releaseTenant();
      throw err;
    } finally {
      release();
    }
  }
}
