import type { Environment, Task } from "../store/index.ts";
import type { ParentSession } from "./ports.ts";
import type { TaskLog } from "./task-log.ts";
import { RozError } from "../errors/index.ts";
import type { WorkerEnding, WorkerFailure } from "./types.ts";
import type { WorkerRun } from "./worker.ts";

/**
 * A task running on this node: its workers, its log, and when it ends. A task ends once it is
 * closed to new workers (REST tasks right after their workers started; a session's task when
 * the session ends; any task when cancelled) and every worker has exited: `completed`, or
 * `cancelled` when it was cancelled.
 */
export class TaskRun {
  readonly task: Task;
  readonly log: TaskLog;
  readonly environment: Environment;
  readonly parent: ParentSession | undefined;
  readonly workers = new Map<string, WorkerRun>();
  /** Resolves once the task's end is stored and announced. */
  readonly finished: Promise<void>;
  #finish!: () => void;
  #open = true;
  #reserved = 0;
  #cancelled: WorkerFailure | undefined;
  #ending = false;
  readonly #onFinished: (run: TaskRun) => void;

  constructor(init: { task: Task; log: TaskLog; environment: Environment; parent?: ParentSession; onFinished: (run: TaskRun) => void }) {
    this.task = init.task;
    this.log = init.log;
    this.environment = init.environment;
    this.parent = init.parent;
    this.#onFinished = init.onFinished;
    this.finished = new Promise((resolve) => (this.#finish = resolve));
  }

  /** Whether new workers may join. */
  get open(): boolean {
    return this.#open && this.#cancelled === undefined;
  }

  /** Workers started or being started: what the per-task limit counts. */
  get size(): number {
    return this.workers.size + this.#reserved;
  }

  /** Holds a place for a worker being set up, so the task cannot end meanwhile. */
  reserve(): () => void {
    this.#reserved++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#reserved--;
      this.#maybeEnd();
    };
  }

  add(worker: WorkerRun): void {
    this.workers.set(worker.spec.id, worker);
    if (this.#cancelled !== undefined) worker.cancel(this.#cancelled);
    void worker.done.then(() => this.#maybeEnd());
  }

  /**
   * Waits until the listed workers have ended, at most `timeoutMs`, or until `signal` aborts;
   * each worker's ending, undefined for one still running.
   */
  async wait(ids: string[], timeoutMs: number | undefined, signal: AbortSignal): Promise<{ workerId: string; ending?: WorkerEnding }[]> {
    const workers = ids.map((id) => {
      const w = this.workers.get(id);
      if (!w) throw new RozError("not_found", `no worker "${id}" in this task`);
      return w;
    });
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stop = new Promise<void>((resolve) => {
      if (timeoutMs !== undefined) timer = setTimeout(resolve, timeoutMs);
      onAbort = resolve;
      signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      await Promise.race([Promise.all(workers.map((w) => w.done)), stop]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener("abort", onAbort);
    }
    return workers.map((w) => ({ workerId: w.spec.id, ...(w.ending ? { ending: w.ending } : {}) }));
  }

  /** Fails every running worker with `reason` and closes the task. */
  cancel(reason: WorkerFailure): void {
    this.#cancelled ??= reason;
    for (const w of this.workers.values()) w.cancel(reason);
    this.close();
  }

  /** No more workers will join; the task ends when the last one has exited. */
  close(): void {
    this.#open = false;
    this.#maybeEnd();
  }

  #maybeEnd(): void {
    if (this.#open && this.#cancelled === undefined) return;
    if (this.#ending || this.#reserved > 0) return;
    if ([...this.workers.values()].some((w) => w.ending === undefined)) return;
    this.#ending = true;
    // `done` settles after WorkerExited was appended; the log end waits for it to be written.
    void Promise.all([...this.workers.values()].map((w) => w.done))
      .then(() => this.log.end(this.#cancelled !== undefined ? "cancelled" : "completed"))
      .finally(() => {
        this.#onFinished(this);
        this.#finish();
      });
  }
}
