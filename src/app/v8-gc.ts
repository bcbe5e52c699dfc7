import v8 from "node:v8";
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
 * Gives back what start-up left behind before the server takes clients. Loading modules,
 * tokenizer tables and migrations grow V8's young generation to its largest size and leave
 * freed pages in V8's pool; V8 returns them only in a memory-reducing collection, which it
 * starts on its own once allocation has been low for a while (for a server that is soon busy:
 * much later). One such collection here takes some 200 ms, before the port is open, and
 * lowers the resident memory of an idle server by about a fifth (≈ 255 → 205 MB measured).
 * Undefined where V8 refuses the collector.
 */
export function returnStartupGarbage(): StartupGarbageReport | undefined {
  const collect = garbageCollector();
  if (collect === undefined) return undefined;
  const rssBefore = process.memoryUsage.rss();
  const started = performance.now();
  collect({ type: "major", flavor: "last-resort" });
  return { rssBefore, rssAfter: process.memoryUsage.rss(), ms: performance.now() - started };
}
