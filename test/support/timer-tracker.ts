/**
 * Leak detection for timers: which timers of this process are alive, and where they were
 * created. Tracks every `Timeout` (setTimeout, setInterval, timers/promises) through
 * async_hooks with its creation stack, so that a test can say "no timer created by the
 * server since this point is still alive" and name the culprit when one is.
 */
import { createHook } from "node:async_hooks";

interface Tracked {
  order: number;
  stack: string;
  timer: { hasRef?: () => boolean; _destroyed?: boolean };
}

export interface TimerTracker {
  /** A point in time: timers created after it are "since" it. */
  mark(): number;
  /**
   * Creation stacks of timers created after `mark` that are still alive and keep the
   * process alive (ref'd), and whose creation stack mentions `pathPart` (e.g. "/src/").
   */
  liveSince(mark: number, pathPart: string): string[];
  stop(): void;
}

/** Starts tracking; `stop()` disables the hook. */
export function trackTimers(): TimerTracker {
  const live = new Map<number, Tracked>();
  let order = 0;
  const previousLimit = Error.stackTraceLimit;
  const hook = createHook({
    init(asyncId, type, _trigger, resource) {
      if (type !== "Timeout") return;
      Error.stackTraceLimit = 30;
      const stack = new Error().stack ?? "";
      Error.stackTraceLimit = previousLimit;
      const frames = stack.split("\n").filter((l) => l.includes("at ") && !l.includes("node:internal/") && !l.includes("timer-tracker"));
      live.set(asyncId, { order: ++order, stack: frames.map((l) => l.trim()).join(" ← "), timer: resource as Tracked["timer"] });
    },
    destroy(asyncId) {
      live.delete(asyncId);
    },
  });
  hook.enable();
  return {
    mark: () => order,
    liveSince: (mark, pathPart) =>
      [...live.values()]
        .filter((t) => t.order > mark && t.timer._destroyed !== true && (t.timer.hasRef?.() ?? true) && t.stack.includes(pathPart))
        .map((t) => t.stack),
    stop: () => void hook.disable(),
  };
}

/** Timers keeping the event loop alive right now, as `process.getActiveResourcesInfo()` lists them. */
export const activeTimerCount = (): number => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
