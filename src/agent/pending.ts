/** How a wait ended. */
export type Settled<T> = { kind: "value"; value: T } | { kind: "timeout" } | { kind: "cancelled" };

interface Entry<T> {
  finish(result: Settled<T>): void;
}

/**
 * Waits keyed by id (tool call results, approvals). Each wait ends exactly once: by
 * `settle`, by its timeout, or by its abort signal; afterwards its id is forgotten, its
 * timer cleared and its abort listener removed, so a late answer is reported as unknown
 * and nothing stays pending.
 */
export class PendingMap<T> {
  #entries = new Map<string, Entry<T>>();

  /** Waits for `settle(id, …)`; `timeoutMs` ≤ 0 means no timeout. */
  wait(id: string, timeoutMs: number, signal: AbortSignal): Promise<Settled<T>> {
    if (this.#entries.has(id)) throw new Error(`duplicate wait for ${id}`);
    return new Promise((resolve) => {
      if (signal.aborted) {
        resolve({ kind: "cancelled" });
        return;
      }
      let timer: NodeJS.Timeout | undefined;
      const onAbort = (): void => entry.finish({ kind: "cancelled" });
      const entry: Entry<T> = {
        finish: (result) => {
          if (this.#entries.get(id) !== entry) return;
          this.#entries.delete(id);
          if (timer !== undefined) clearTimeout(timer);
          signal.removeEventListener("abort", onAbort);
          resolve(result);
        },
      };
      this.#entries.set(id, entry);
      signal.addEventListener("abort", onAbort, { once: true });
      if (timeoutMs > 0) timer = setTimeout(() => entry.finish({ kind: "timeout" }), timeoutMs);
    });
  }

  /** Ends the wait for `id` with `value`; false when no wait for it is open. */
  settle(id: string, value: T): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined) return false;
    entry.finish({ kind: "value", value });
    return true;
  }

  /** Ends every open wait as cancelled (and clears their timers). */
  cancelAll(): void {
    for (const entry of [...this.#entries.values()]) entry.finish({ kind: "cancelled" });
  }

  /** The ids of the open waits. */
  ids(): string[] {
    return [...this.#entries.keys()];
  }

  get size(): number {
    return this.#entries.size;
  }
}
