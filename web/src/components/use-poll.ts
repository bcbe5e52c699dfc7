import { useEffect, useState } from "preact/hooks";

/**
 * Calls `load` now and then every `intervalMs` after the previous call settled (never two at
 * once); keeps the last value and the last error. `deps` restart it.
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: unknown[] = []): { value: T | undefined; error: string; reload: () => void } {
  const [value, setValue] = useState<T | undefined>(undefined);
  const [error, setError] = useState("");
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const v = await load();
        if (!stopped) {
          setValue(v);
          setError("");
        }
      } catch (err) {
        if (!stopped) setError((err as Error).message);
      }
      if (!stopped && intervalMs > 0) timer = setTimeout(run, intervalMs);
    };
    void run();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [...deps, tick]);
  return { value, error, reload: () => setTick((t) => t + 1) };
}
