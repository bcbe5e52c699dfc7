import type { FastifyBaseLogger } from "fastify";

/**
 * What a closing app stops, in this order: the one place the shutdown order is written.
 * New work stops first; running turns get the grace period, then every live session is stored
 * and detached (resumable by the next process); open streams end; the store closes last.
 */
export const SHUTDOWN_ORDER = [
  "event-loop watchdog",
  "session routing",
  "relay hosting",
  "event pruning",
  "session retention",
  "node heartbeat",
  "listener",
  "running turns",
  "live sessions",
  // At once, so that other nodes adopt the suspended sessions as their clients come back.
  "node registration",
  "open streams",
  "team watches",
  "relay",
  "connections",
  "teams",
  "mcp connections",
  "fastify",
  "bus",
  "store",
  // Last: the spans of everything above (turns cut by the shutdown included) are exported.
  "traces",
] as const;

export type ShutdownStep = (typeof SHUTDOWN_ORDER)[number];

/**
 * The app's shutdown steps. Each module registers its step as soon as it has opened what the
 * step closes, so a start-up that fails half way closes exactly what was opened so far, in
 * `SHUTDOWN_ORDER` as a full shutdown would.
 */
export class Lifecycle {
  readonly #steps = new Map<ShutdownStep, () => unknown>();
  #closed: Promise<void> | undefined;
  #closing = false;

  /** True from the moment closing begins (readiness fails, relayed streams are refused). */
  get closing(): boolean {
    return this.#closing;
  }

  /** Registers what `step` does at shutdown; each step is registered once. */
  onClose(step: ShutdownStep, run: () => unknown): void {
    if (this.#steps.has(step)) throw new Error(`shutdown step "${step}" is registered twice`);
    this.#steps.set(step, run);
  }

  /**
   * `given` when the caller passed one (the caller owns and closes it), else what `open`
   * opens, closed by this app at `step`.
   */
  async own<T extends { close(): unknown }>(step: ShutdownStep, given: T | undefined, open: () => Promise<T>): Promise<T> {
    if (given) return given;
    const opened = await open();
    this.onClose(step, () => opened.close());
    return opened;
  }

  /**
   * Runs the registered steps in `SHUTDOWN_ORDER`, each awaited; a failing step is logged and
   * the rest still run. A second call returns the first one's promise.
   */
  close(log: Pick<FastifyBaseLogger, "warn">): Promise<void> {
    this.#closing = true;
    this.#closed ??= this.#runSteps(log);
    return this.#closed;
  }

  async #runSteps(log: Pick<FastifyBaseLogger, "warn">): Promise<void> {
    for (const step of SHUTDOWN_ORDER) {
      const run = this.#steps.get(step);
      if (!run) continue;
      try {
        await run();
      } catch (err) {
        log.warn({ err, step }, "shutdown step failed");
      }
    }
  }
}
