import { appendAll, type ChunkedBytes } from "./chunked-bytes.ts";

/** The parts of a rewritten message, in order: ranges of the original (adjacent ones merged) and new bytes. */
export class Parts {
  readonly #bytes: ChunkedBytes;
  readonly #parts: Uint8Array[] = [];
  #from = -1;
  #to = -1;

  constructor(bytes: ChunkedBytes) {
    this.#bytes = bytes;
  }

  keep(start: number, end: number): void {
    if (this.#to === start) {
      this.#to = end;
      return;
    }
    this.#flush();
    this.#from = start;
    this.#to = end;
  }

  add(parts: readonly Uint8Array[]): void {
    this.#flush();
    appendAll(this.#parts, parts);
  }

  done(): Uint8Array[] {
    this.#flush();
    return this.#parts;
  }

  #flush(): void {
    if (this.#from >= 0) appendAll(this.#parts, this.#bytes.slice(this.#from, this.#to));
    this.#from = -1;
    this.#to = -1;
  }
}
