import v8 from "node:v8";
import vm from "node:vm";

/**
 * V8's `gc()` (the one `--expose-gc` installs): a young-generation collection, or a full one;
 * `last-resort` also gives V8's pooled pages back to the system.
 */
export type CollectGarbage = (options: { type: "minor" } | { type: "major"; flavor?: "regular" | "last-resort" }) => void;

/**
 * V8's `gc` function: the global one when Node runs with `--expose-gc`, otherwise taken
 * (once per thread) from a context made while the flag is briefly on (the flag only decides
 * whether new contexts get the function). Undefined where V8 refuses; the next call tries again.
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
