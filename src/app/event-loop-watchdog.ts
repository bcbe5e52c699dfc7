import { performance } from "node:perf_hooks";
import type { Counter } from "prom-client";

export interface WatchdogLogger {
  warn(obj: object, msg?: string): void;
}

/** What the watchdog reports with a block: the operations that started last, newest first. */
export type Operation = Record<string, unknown>;

const RECENT = 5;

/**
 * Notices event-loop blocks: a timer that fires late by more than `thresholdMs` means
 * something held the loop that long. Each block is counted and logged with the operations
 * noted last (the REST request or session request that most likely ran), because by the time
 * the timer fires the culprit has returned. The delay distribution itself is exported by
 * prom-client's default metrics (`roz_nodejs_eventloop_lag_*`).
 */
export class EventLoopWatchdog {
  readonly #thresholdMs: number;
  readonly #log: WatchdogLogger;
  readonly #blocks: Counter | undefined;
  readonly #recent: (Operation & { at: number })[] = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(options: { thresholdMs: number; log: WatchdogLogger; blocks?: Counter; tickMs?: number }) {
    this.#thresholdMs = options.thresholdMs;
    this.#log = options.log;
    this.#blocks = options.blocks;
    const tickMs = options.tickMs ?? 20;
    let expected = performance.now() + tickMs;
    this.#timer = setInterval(() => {
      const now = performance.now();
      const lateMs = now - expected;
      expected = now + tickMs;
      if (lateMs > this.#thresholdMs) this.#report(lateMs);
    }, tickMs);
    this.#timer.unref();
  }

  /** Records that an operation starts (cheap: a bounded list). */
  note(operation: Operation): void {
    this.#recent.unshift({ ...operation, at: Date.now() });
    if (this.#recent.length > RECENT) this.#recent.length = RECENT;
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #report(blockedMs: number): void {
    this.#blocks?.inc();
    const now = Date.now();
    this.#log.warn(
      {
        blockedMs: Math.round(blockedMs),
        recentOperations: this.#recent.map(({ at, ...op }) => ({ ...op, startedMsAgo: now - at })),
      },
      "event loop blocked",
    );
  }
}
