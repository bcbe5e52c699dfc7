import { abortError, sleep } from "./abort.ts";
import { toModelError } from "./classify-error.ts";
import { drain, pullEvents } from "./push.ts";

/** How provider calls are retried. All fields optional; see `defaultRetryOptions`. */
export interface RetryOptions {
  /** Retries after the first attempt (so `retries + 1` attempts in all). */
  retries?: number;
  /** First backoff delay; doubles per retry. */
  baseDelayMs?: number;
  /** Cap of one backoff delay. */
  maxDelayMs?: number;
  /**
   * Longest `retry-after` we wait for. A provider asking for more gets no retry: the
   * (retryable) ModelError goes to the caller at once instead of blocking the turn.
   */
  maxRetryAfterMs?: number;
}

export const defaultRetryOptions: Required<RetryOptions> = {
  retries: 3,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 30_000,
};

/** Exponential backoff with "equal jitter": half fixed, half random, so retries spread out. */
export function backoffDelay(retry: number, options: Required<RetryOptions>, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** retry);
  return ceiling / 2 + random() * (ceiling / 2);
}

/**
 * Runs `attempt` and re-runs it on retryable failures, but only while no output has been
 * pushed into `sink` yet: once output reached the caller a failure is thrown at once (a
 * replay would duplicate it). `isOutput` says which events count (default: all); a usage
 * report is none, and the usage of a failed attempt still reaches the caller (it was billed).
 * Waits honour `retry-after` (capped) or back off with jitter.
 *
 * Guarantees: failures surface as `ModelError`; when `signal` aborts (during an attempt or
 * a wait) the call rejects with the abort reason instead, never a ModelError.
 */
export async function retrying<T>(
  attempt: (sink: (event: T) => void) => Promise<void>,
  signal: AbortSignal,
  options: RetryOptions,
  sink: (event: T) => void,
  isOutput: (event: T) => boolean = () => true,
): Promise<void> {
  const settings = { ...defaultRetryOptions, ...withoutUndefined(options) };
  for (let retry = 0; ; retry++) {
    if (signal.aborted) throw abortError(signal);
    let started = false;
    try {
      await attempt((event) => {
        if (isOutput(event)) started = true;
        sink(event);
      });
      return;
    } catch (err) {
      if (signal.aborted) throw abortError(signal);
      const error = toModelError(err);
      if (started || !error.retryable || retry >= settings.retries) throw error;
      const wait = error.retryAfterMs ?? backoffDelay(retry, settings);
      if (wait > settings.maxRetryAfterMs) throw error;
      await sleep(wait, signal);
    }
  }
}

/** `retrying` for attempts that yield: the same rules, in pull form. */
export function retryingStream<T>(attempt: () => AsyncIterable<T>, signal: AbortSignal, options: RetryOptions = {}): AsyncIterable<T> {
  return pullEvents<T>((sink, stop) => retrying((into) => drain(attempt(), into, stop), signal, options, sink));
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
