/** How many of something each key holds: connections per address, streams per API key. */
export class KeyCounts {
  readonly #counts = new Map<string, number>();

  /** What `key` holds now. */
  of(key: string): number {
    return this.#counts.get(key) ?? 0;
  }

  /** Counts one more for `key`; the returned release counts it off again, once however often it is called. */
  hold(key: string): () => void {
    this.#counts.set(key, this.of(key) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.of(key) - 1;
      if (left <= 0) this.#counts.delete(key);
      else this.#counts.set(key, left);
    };
  }
}
