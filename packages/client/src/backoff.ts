/**
 * Exponential backoff with jitter: each wait is a random time between half and all of
 * `initialMs · 2^attempt`, capped at `maxMs`, so clients cut off together do not come back together.
 */
export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  #attempt = 0;

  constructor(initialMs = 200, maxMs = 10_000) {
    this.#initialMs = initialMs;
    this.#maxMs = maxMs;
  }

  next(): number {
    const ceiling = Math.min(this.#maxMs, this.#initialMs * 2 ** this.#attempt++);
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  reset(): void {
    this.#attempt = 0;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
