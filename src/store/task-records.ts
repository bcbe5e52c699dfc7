/**
 * The shapes the store keeps and takes for multi-agent tasks: tasks, their workers and their
 * team event log. Times are epoch ms.
 */
import type { TokenUsage } from "../domain/index.ts";
import type { Page, PageRequest } from "./records.ts";

/** Where a task is: `running` until every worker has exited and no more can join. */
export type TaskStatus = "running" | "completed" | "cancelled";

/** A multi-agent task: workers that run agent loops, with one team event log. */
export interface Task {
  id: string;
  tenantId: string;
  environmentId: string;
  /** The session whose agent spawned the workers, or whose client tools they may use. */
  sessionId?: string;
  prompt: string;
  model?: string;
  status: TaskStatus;
  /** The node running its workers. */
  nodeId?: string;
  /** Seq of the last stored team event (0 when none). */
  lastSeq: number;
  /** Sum of the usage of its finished workers. */
  usage: TokenUsage;
  /** Sum of what its finished workers' model calls cost, USD. */
  costUsd: number;
  createdAt: number;
  updatedAt: number;
  endedAt?: number;
}

export interface NewTask {
  id?: string;
  environmentId: string;
  sessionId?: string;
  prompt: string;
  model?: string;
  nodeId?: string;
}

export type WorkerStatus = "running" | "completed" | "failed";

/** One worker of a task, numbered from 1 in spawn order. */
export interface Worker {
  id: string;
  taskId: string;
  index: number;
  prompt: string;
  mode: string;
  model: string;
  /** 1 for a worker spawned by a session or REST, 2 for one spawned by a worker, … */
  depth: number;
  status: WorkerStatus;
  result?: string;
  failure?: string;
  /** The worker's conversation when it ended (opaque JSON). */
  transcript?: unknown;
  usage: TokenUsage;
  /** What its model calls cost, USD (0 while it runs). */
  costUsd: number;
  createdAt: number;
  endedAt?: number;
}

export interface NewWorker {
  id?: string;
  prompt: string;
  mode: string;
  model: string;
  depth: number;
}

/** How a worker ended. */
export interface WorkerEnd {
  status: Exclude<WorkerStatus, "running">;
  result?: string;
  failure?: string;
  transcript?: unknown;
  usage: TokenUsage;
  /** What its model calls cost, USD (default 0). */
  costUsd?: number;
}

/** Which tasks `listTasks` returns. */
export interface TaskFilter extends PageRequest {
  status?: TaskStatus;
}

/** One stored team event (a serialized `TeamEvent`). */
export interface TeamEventRow {
  seq: number;
  payload: Uint8Array;
  createdAt: number;
}

export interface TaskStore {
  /** A duplicate `id` throws `conflict`. */
  createTask(tenantId: string, input: NewTask): Promise<Task>;
  getTask(tenantId: string, id: string): Promise<Task | undefined>;
  listTasks(tenantId: string, filter?: TaskFilter): Promise<Page<Task>>;
  /** Adds a worker numbered after the task's last one; undefined when the task is unknown. */
  addWorker(tenantId: string, taskId: string, input: NewWorker): Promise<Worker | undefined>;
  /** The task's workers in spawn order; undefined when the task is unknown. */
  listWorkers(tenantId: string, taskId: string): Promise<Worker[] | undefined>;
  /**
   * Ends a running worker and adds its usage to the task's, in one transaction; false when the
   * worker is unknown, another task's, or already ended (so usage is counted once).
   */
  endWorker(tenantId: string, taskId: string, workerId: string, end: WorkerEnd): Promise<boolean>;
  /**
   * Appends team events atomically and records the highest seq as the task's `lastSeq`; false
   * when the task is unknown; a repeated seq throws `conflict` and stores nothing.
   */
  appendTeamEvents(tenantId: string, taskId: string, events: readonly { seq: number; payload: Uint8Array; createdAt: number }[]): Promise<boolean>;
  /** Events with seq > `afterSeq`, ascending, at most `limit` (default 1000); undefined when the task is unknown. */
  readTeamEvents(tenantId: string, taskId: string, range?: { afterSeq?: number; limit?: number }): Promise<TeamEventRow[] | undefined>;
  /** Ends a running task with `status`; undefined when unknown or not running. */
  endTask(tenantId: string, taskId: string, status: Exclude<TaskStatus, "running">): Promise<Task | undefined>;
  /** Running tasks of every tenant owned by `nodeId` (all running ones when absent): the startup check. */
  runningTasks(nodeId?: string): Promise<Task[]>;
  /** Running tasks whose node is unknown or has not heart-beaten since `aliveSince` (or stopped). */
  orphanedTasks(aliveSince: number): Promise<Task[]>;
  /**
   * Takes a running task over from `fromNode` (compare-and-set on its node, as for sessions),
   * so that exactly one node closes an orphaned task. False when another node was first.
   */
  claimTask(tenantId: string, taskId: string, change: { fromNode: string | undefined; toNode: string }): Promise<boolean>;
}
