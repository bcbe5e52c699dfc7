/** The paths of `paths` (field numbers joined with `/`) that are `path` or below it. */
export const pathsUnder = (paths: Iterable<string>, path: string): string[] => [...paths].filter((p) => p === path || p.startsWith(`${path}/`));

/**
 * The lists a cut shortens (by path), each to `maxTools + 1` tools over the occurrences a
 * decoder merges, and every path that leads to one.
 */
export class Cut {
  readonly through = new Set<string>();
  readonly #left = new Map<string, number>();
  readonly #keep: number;

  constructor(overCap: readonly string[], maxTools: number) {
    this.#keep = maxTools + 1;
    for (const path of overCap) {
      this.#left.set(path, this.#keep);
      const numbers = path.split("/");
      for (let i = 1; i <= numbers.length; i++) this.through.add(numbers.slice(0, i).join("/"));
    }
  }

  /** Whether the next tool of the list at `path` is kept. */
  take(path: string): boolean {
    const left = this.#left.get(path) ?? 0;
    if (left <= 0) return false;
    this.#left.set(path, left - 1);
    return true;
  }

  /** What a decoder discarded at and below `path` (a rival oneof member came): lists there start anew. */
  refill(path: string): void {
    for (const p of pathsUnder(this.#left.keys(), path)) this.#left.set(p, this.#keep);
  }
}
