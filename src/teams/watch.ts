import { RozError } from "../errors/index.ts";
import type { TeamsDeps } from "./ports.ts";
import { END_HEADER, SEQ_HEADER, teamSubject } from "./subjects.ts";

const PAGE = 1000;
/** Live messages a watcher buffers before it falls back to the store (see `maxPending`). */
const LIVE_BUFFER = 1024;

/**
 * A task's team events for one watcher, as stored bytes: those after `afterSeq` from the
 * store, then live ones from the bus, with no gap or repeat at the seam (the subscription
 * starts before the store is read, events are stored before they are published, and seqs
 * already yielded are skipped). A watcher that falls behind loses live messages, never the
 * workers' time: it notices the gap by seq and reads the store. Ends after the last event
 * of a finished task; throws `not_found` for an unknown or another tenant's task.
 */
export async function watchTask(
  deps: Pick<TeamsDeps, "store" | "bus">,
  tenantId: string,
  taskId: string,
  afterSeq: number,
  signal: AbortSignal,
): Promise<AsyncIterable<Uint8Array>> {
  const live = deps.bus.subscribe(teamSubject(taskId), { from: "new", maxPending: LIVE_BUFFER });
  let task;
  try {
    // The store is read after the live start is fixed, so no event falls between the two.
    await live.ready;
    task = await deps.store.getTask(tenantId, taskId);
  } catch (err) {
    live.close();
    throw err;
  }
  if (task === undefined) {
    live.close();
    throw new RozError("not_found", `task "${taskId}" not found`);
  }
  const onAbort = (): void => live.close();
  signal.addEventListener("abort", onAbort, { once: true });

  async function* events(): AsyncGenerator<Uint8Array> {
    let last = afterSeq;
    /** Everything stored after `last`, page by page. */
    async function* fromStore(): AsyncGenerator<Uint8Array> {
      for (;;) {
        const rows = (await deps.store.readTeamEvents(tenantId, taskId, { afterSeq: last, limit: PAGE })) ?? [];
        for (const row of rows) {
          last = row.seq;
          yield row.payload;
        }
        if (rows.length < PAGE) return;
      }
    }
    try {
      yield* fromStore();
      const now = await deps.store.getTask(tenantId, taskId);
      if (now === undefined || (now.status !== "running" && last >= now.lastSeq)) return;
      for await (const message of live) {
        const end = message.headers[END_HEADER];
        if (end !== undefined) {
          if (last < Number(end)) yield* fromStore();
          return;
        }
        const seq = Number(message.headers[SEQ_HEADER]);
        if (!Number.isSafeInteger(seq) || seq <= last) continue;
        if (seq === last + 1) {
          last = seq;
          yield message.data;
        } else {
          yield* fromStore();
        }
      }
      if (!signal.aborted) throw new RozError("unavailable", "the event bus closed; watch again with after_seq");
    } finally {
      signal.removeEventListener("abort", onAbort);
      live.close();
    }
  }
  return events();
}
