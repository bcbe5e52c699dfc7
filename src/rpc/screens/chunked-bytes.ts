/**
 * A message's bytes as they arrived, in several chunks, read by absolute position without
 * joining them (joining would copy a large message once more before connect copies it).
 * Reads go mostly forward: the chunk of the last read is where the next one starts looking.
 */
export class ChunkedBytes {
  readonly length: number;
  readonly #chunks: readonly Uint8Array[];
  readonly #starts: number[] = [];
  #index = 0;
  /** The chunk of the last read, and where it starts and ends. */
  #chunk: Uint8Array;
  #chunkStart = 0;
  #chunkEnd: number;

  constructor(chunks: readonly Uint8Array[]) {
    this.#chunks = chunks;
    let start = 0;
    for (const chunk of chunks) {
      this.#starts.push(start);
      start += chunk.byteLength;
    }
    this.length = start;
    this.#chunk = chunks[0] ?? new Uint8Array(0);
    this.#chunkEnd = this.#chunk.byteLength;
  }

  at(pos: number): number {
    if (pos < this.#chunkStart || pos >= this.#chunkEnd) this.#seek(pos);
    return this.#chunk[pos - this.#chunkStart]!;
  }

  /** The bytes of `[start, end)` as views of the chunks (no copy). */
  slice(start: number, end: number): Uint8Array[] {
    const views: Uint8Array[] = [];
    for (let pos = start; pos < end; ) {
      this.#seek(pos);
      const to = Math.min(end, this.#chunkEnd);
      views.push(this.#chunk.subarray(pos - this.#chunkStart, to - this.#chunkStart));
      pos = to;
    }
    return views;
  }

  #seek(pos: number): void {
    let i = this.#index;
    while (i > 0 && pos < this.#starts[i]!) i--;
    while (i < this.#chunks.length - 1 && pos >= this.#starts[i]! + this.#chunks[i]!.byteLength) i++;
    this.#index = i;
    this.#chunk = this.#chunks[i]!;
    this.#chunkStart = this.#starts[i]!;
    this.#chunkEnd = this.#chunkStart + this.#chunk.byteLength;
  }
}

/**
 * Appends `items` one by one: a client decides how many chunks a message arrives in, and a
 * spread (`push(...items)`) throws beyond some 100,000 of them.
 */
export function appendAll<T>(target: T[], items: readonly T[]): void {
  for (const item of items) target.push(item);
}

/** Cuts a message in `bytes[start, end)`: its parts when a tools list was over the cap, else undefined. */
export type MessageCut = (bytes: ChunkedBytes, start: number, end: number) => Uint8Array[] | undefined;

/** How the messages of a call are cut: plain ones, and compressed ones when the screen knows their encoding. */
export interface Cuts {
  plain: MessageCut;
  compressed?: MessageCut;
}
