import { Backoff, sleep } from "./backoff.ts";
import { RozError, toRozError } from "./errors.ts";
import { type TeamEvent, teamEventOf } from "./events.ts";
import type { Connection } from "./platform.ts";

/**
 * A task's team events (`WatchTeam`, session-behaviour.md §7): those after `afterSeq`, then live
 * ones, each once and in order, until the task has finished and every worker exited. A broken
 * stream is re-opened from the last seq delivered, with backoff, until `reconnectTimeoutMs`.
 * Breaking out of the loop (or `signal`) closes the stream.
 */
export async function* watchTeam(
  connection: Connection,
  taskId: string,
  options: { afterSeq?: number | undefined; signal?: AbortSignal | undefined; reconnectTimeoutMs: number },
): AsyncGenerator<TeamEvent> {
  let lastSeq = options.afterSeq ?? 0;
  const backoff = new Backoff();
  let brokenSince: number | undefined;
  const abort = new AbortController();
  const stop = (): void => abort.abort();
  options.signal?.addEventListener("abort", stop, { once: true });
  try {
    for (;;) {
      try {
        for await (const e of connection.agent.watchTeam({ taskId, afterSeq: BigInt(lastSeq) }, { signal: abort.signal })) {
          brokenSince = undefined;
          backoff.reset();
          const seq = Number(e.seq);
          if (seq !== 0 && seq <= lastSeq) continue;
          if (seq !== 0) lastSeq = seq;
          const event = teamEventOf(e);
          if (event) yield event;
        }
        return;
      } catch (err) {
        if (abort.signal.aborted) return;
        const error = toRozError(err);
        if (!error.retryable) throw error;
        brokenSince ??= Date.now();
        if (Date.now() - brokenSince > options.reconnectTimeoutMs) {
          throw new RozError("reconnect_timeout", `no working connection for ${options.reconnectTimeoutMs} ms`, { retryable: true, cause: error });
        }
        await sleep(backoff.next(), abort.signal);
      }
    }
  } finally {
    options.signal?.removeEventListener("abort", stop);
    abort.abort();
  }
}
