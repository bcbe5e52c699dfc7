import v8 from "node:v8";
import { constants, PerformanceObserver } from "node:perf_hooks";
import vm from "node:vm";

/**
 * V8's `gc()` (the one `--expose-gc` installs): a young-generation collection, or a
 * memory-reducing one that also gives V8's pooled pages back to the system.
 */
export type CollectGarbage = (options: { type: "minor" } | { type: "major"; flavor: "last-resort" }) => void;

/**
 * V8's `gc` function: the global one when Node runs with `--expose-gc`, otherwise taken
 * (once) from a context made while the flag is briefly on (the flag only decides whether new
 * contexts get the function). Undefined where V8 refuses.
 */
export function garbageCollector(): CollectGarbage | undefined {
  const global = (globalThis as { gc?: unknown }).gc;
  if (typeof global === "function") return global as CollectGarbage;
  exposed ??= exposeGc();
  return exposed ?? undefined;
}

let exposed: CollectGarbage | null | undefined;

function exposeGc(): CollectGarbage | null {
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc: unknown = vm.runInNewContext("gc");
    return typeof gc === "function" ? (gc as CollectGarbage) : null;
  } catch {
    return null;
  } finally {
    v8.setFlagsFromString("--no-expose-gc");
  }
}

export interface StartupGarbageReport {
  rssBefore: number;
  rssAfter: number;
  ms: number;
}

/**
 * Sizes V8's heap for a long-running server and gives back what start-up left behind, before
 * the server takes clients.
 *
 * - The old generation may grow by `heapGrowingPercent` of what the last mark-compact kept
 *   before the next one (0: V8's own rule, up to four times it on a fast machine). V8's rule
 *   favours throughput; under a flood of short-lived streams it let the old generation reach
 *   200–300 MB with some 60 MB alive, and V8 keeps the freed pages long after.
 * - Loading modules, tokenizer tables and migrations grow V8's young generation to its
 *   largest size and leave freed pages in V8's pool; V8 returns them only in a
 *   memory-reducing collection, which it starts on its own once allocation has been low for a
 *   while (for a server that is soon busy: much later). One such collection here takes some
 *   200 ms, before the port is open, and lowers the resident memory of an idle server by about
 *   a fifth (≈ 255 → 205 MB measured).
 *
 * The report is undefined where V8 refuses the collector.
 */
export function prepareHeapForServing(heapGrowingPercent: number): StartupGarbageReport | undefined {
  if (heapGrowingPercent > 0) v8.setFlagsFromString(`--heap-growing-percent=${heapGrowingPercent}`);
  const collect = garbageCollector();
  if (collect === undefined) return undefined;
  const rssBefore = process.memoryUsage.rss();
  const started = performance.now();
  collect({ type: "major", flavor: "last-resort" });
  return { rssBefore, rssAfter: process.memoryUsage.rss(), ms: performance.now() - started };
}

/**
 * Whether V8's incremental marking for a mark-compact is under way, as far as Node's `gc`
 * performance entries tell (they arrive a moment after the fact). A young-generation
 * collection requested while it is under way does not stay young: V8 finishes the marking in
 * one pause instead, as long as a mark-compact. Entries are watched between `start` and
 * `stop`; before the first one arrives, marking counts as not under way.
 */
export class MajorMarkingWatch {
  #marking = false;
  #observer: PerformanceObserver | undefined;

  get marking(): boolean {
    return this.#marking;
  }

  start(): void {
    if (this.#observer !== undefined) return;
    this.#marking = false;
    this.#observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
        if (kind === constants.NODE_PERFORMANCE_GC_INCREMENTAL) this.#marking = true;
        else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) this.#marking = false;
      }
    });
    this.#observer.observe({ entryTypes: ["gc"] });
  }

  stop(): void {
    this.#observer?.disconnect();
    this.#observer = undefined;
    this.#marking = false;
  }
}

/**
 * V8's young generation keeps its size while streams arrive in a flood: V8 reads
 * `--semi-space-growth-factor` whenever it grows the young generation, so it can change at run
 * time; `leave` restores V8's default. Left alone, a flood of short-lived streams grows the
 * young generation to its largest (128 MB), and V8 keeps those pages long after.
 */
export const floodHeapSizing = {
  enter(): void {
    v8.setFlagsFromString("--semi-space-growth-factor=1");
  },
  leave(): void {
    v8.setFlagsFromString("--semi-space-growth-factor=2");
  },
};
