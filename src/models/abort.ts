/**
 * Abort helpers shared by the providers. An aborted model call always ends with the
 * signal's own reason (a DOMException named `AbortError` unless the caller chose another
 * reason), never with a ModelError, so callers can tell "cancelled" from "failed".
 */

/** The error an aborted call throws: `signal.reason`, or an AbortError DOMException. */
export function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

/**
 * Waits `ms` milliseconds, or rejects with the abort error as soon as `signal` aborts.
 * The timer and the listener are always removed, so long retries leak nothing.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
