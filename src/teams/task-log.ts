import type { TaskStatus } from "../store/index.ts";
import type { TeamsDeps } from "./ports.ts";
import { END_HEADER, SEQ_HEADER, teamSubject } from "./subjects.ts";
import type { SequencedTeamEvent, TeamEventBody } from "./types.ts";

interface Pending {
  sequenced: SequencedTeamEvent;
  done: () => void;
}

const RETRY_MS = 200;
const MAX_ATTEMPTS = 5;

/**
 * The team event log of one task on the node that runs it. `append` numbers events in call
 * order (one order across all workers), and each batch is stored before any of it is
 * published, so a watcher that reads the store and then the bus sees no gap. Batches are
 * written one at a time; events appended meanwhile go into the next batch.
 */
export class TaskLog {
  readonly #taskId: string;
  readonly #tenantId: string;
  readonly #deps: Pick<TeamsDeps, "store" | "bus" | "encode" | "log">;
  #seq: number;
  #pending: Pending[] = [];
  #writing: Promise<void> | undefined;
  #ended = false;

  constructor(task: { id: string; tenantId: string; lastSeq: number }, deps: Pick<TeamsDeps, "store" | "bus" | "encode" | "log">) {
    this.#taskId = task.id;
    this.#tenantId = task.tenantId;
    this.#seq = task.lastSeq;
    this.#deps = deps;
  }

  /** Numbers the event now; resolves once it is stored and published. */
  append(event: TeamEventBody): Promise<void> {
    if (this.#ended) return Promise.resolve();
    return new Promise((done) => {
      this.#pending.push({ sequenced: { seq: ++this.#seq, time: Date.now(), event }, done });
      this.#writing ??= this.#drain().finally(() => (this.#writing = undefined));
    });
  }

  /**
   * Stores the task's end once every appended event is written, then publishes the end
   * marker that tells live watchers the log is complete. Later appends are ignored.
   */
  async end(status: Exclude<TaskStatus, "running">): Promise<void> {
    if (this.#ended) return;
    while (this.#writing) await this.#writing;
    this.#ended = true;
    try {
      await this.#deps.store.endTask(this.#tenantId, this.#taskId, status);
    } catch (err) {
      this.#deps.log.error({ err, taskId: this.#taskId }, "could not store the task's end");
    }
    await this.#deps.bus.publish(teamSubject(this.#taskId), new Uint8Array(), { [END_HEADER]: String(this.#seq) }).catch((err: unknown) => {
      this.#deps.log.warn({ err, taskId: this.#taskId }, "could not publish the task's end");
    });
  }

  async #drain(): Promise<void> {
    // Let events appended in the same tick join this batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0);
      const payloads = batch.map((p) => this.#deps.encode(p.sequenced));
      await this.#store(batch, payloads);
      for (const [i, p] of batch.entries()) {
        const { seq } = p.sequenced;
        await this.#deps.bus.publish(teamSubject(this.#taskId), payloads[i]!, { [SEQ_HEADER]: String(seq) }).catch((err: unknown) => {
          // Watchers notice the gap by seq and read the store instead.
          this.#deps.log.warn({ err, taskId: this.#taskId, seq }, "could not publish a team event");
        });
        p.done();
      }
    }
  }

  async #store(batch: Pending[], payloads: Uint8Array[]): Promise<void> {
    const rows = batch.map((p, i) => ({ seq: p.sequenced.seq, payload: payloads[i]!, createdAt: p.sequenced.time }));
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#deps.store.appendTeamEvents(this.#tenantId, this.#taskId, rows);
        return;
      } catch (err) {
        if (attempt >= MAX_ATTEMPTS) {
          this.#deps.log.error({ err, taskId: this.#taskId, seqs: rows.map((r) => r.seq) }, "team events could not be stored");
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS * attempt));
      }
    }
  }
}
