/**
 * The server's hold on V8's garbage collector: the heap sizing set before
 * the server listens and while streams arrive in a flood, and whether a full collection's
 * marking is under way.
 */
import { constants, PerformanceObserver } from "node:perf_hooks";
import v8 from "node:v8";
import { garbageCollector } from "../domain/index.ts";

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
 *   before the next one (0, or `--heap-growing-percent` given to node: left as it is; V8's own
 *   rule lets it grow up to four times that on a fast machine). V8's rule
 *   favours throughput; under a flood of short-lived streams it let the old generation reach
 *   200–300 MB with some 60 MB alive, and V8 keeps the freed pages long after.
 * - Loading modules, tokenizer tables and migrations grow V8's young generation to 64 MB
 *   and leave freed pages in V8's pool; V8 returns them only in a
 *   memory-reducing collection, which it starts on its own once allocation has been low for a
 *   while (for a server that is soon busy: much later). One such collection here takes some
 *   200 ms, before the port is open, and lowers the resident memory of an idle server by about
 *   a fifth (≈ 255 → 205 MB measured).
 *
 * The report is undefined where V8 refuses the collector.
 */
export function prepareHeapForServing(heapGrowingPercent: number): StartupGarbageReport | undefined {
  // A value given to node itself (`node --heap-growing-percent=N`) is the operator's choice.
  if (heapGrowingPercent > 0 && nodeFlag("heap-growing-percent") === undefined) {
    v8.setFlagsFromString(`--heap-growing-percent=${heapGrowingPercent}`);
  }
  const collect = garbageCollector();
  if (collect === undefined) return undefined;
  const rssBefore = process.memoryUsage.rss();
  const started = performance.now();
  collect({ type: "major", flavor: "last-resort" });
  return { rssBefore, rssAfter: process.memoryUsage.rss(), ms: performance.now() - started };
}

/** The value of `--<name>=<value>` among node's own flags, if given there. */
function nodeFlag(name: string): string | undefined {
  const prefixes = [`--${name}=`, `--${name.replaceAll("-", "_")}=`];
  for (const arg of process.execArgv) for (const prefix of prefixes) if (arg.startsWith(prefix)) return arg.slice(prefix.length);
  return undefined;
}

/** Size and use of one of V8's heap spaces ("new_space", "old_space", …), in bytes. */
export function heapSpace(name: string): { size: number; used: number } {
  const space = v8.getHeapSpaceStatistics().find((each) => each.space_name === name);
  return { size: space?.space_size ?? 0, used: space?.space_used_size ?? 0 };
}

/** Whether a full collection's marking is under way, watched between `start` and `stop`. */
export interface MarkingState {
  start(): void;
  stop(): void;
  readonly marking: boolean;
}

/**
 * Whether V8's incremental marking for a mark-compact is under way, as far as Node's `gc`
 * performance entries tell. They arrive a moment after the fact (two `setImmediate` hops), so
 * a caller acting on `marking` may still, rarely, act just after marking began. A
 * young-generation collection requested while marking is under way does not stay young: V8
 * finishes the marking in one pause instead, as long as a mark-compact. Before the first
 * entry arrives, marking counts as not under way.
 */
export class MajorMarkingWatch implements MarkingState {
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

/** Heap sizing for the time a flood lasts: `enter` at its start, `leave` at its end. */
export interface HeapSizing {
  enter(): void;
  leave(): void;
}

/** Floods in progress over every server of this process (they share one V8). */
let floodsInProgress = 0;

/**
 * V8's young generation keeps its size while streams arrive in a flood: V8 reads
 * `--semi-space-growth-factor` whenever it grows the young generation, so it can change at run
 * time. Left alone, a flood of short-lived streams grows the young generation to its largest
 * (128 MB on Node 24 here), and V8 keeps those pages long after. `leave` restores the factor
 * node was given, or V8's default (2), once no server of the process is in a flood.
 */
export const floodHeapSizing: HeapSizing = {
  enter(): void {
    if (floodsInProgress++ === 0) v8.setFlagsFromString("--semi-space-growth-factor=1");
  },
  leave(): void {
    if (floodsInProgress === 0 || --floodsInProgress > 0) return;
    v8.setFlagsFromString(`--semi-space-growth-factor=${nodeFlag("semi-space-growth-factor") ?? 2}`);
  },
};
