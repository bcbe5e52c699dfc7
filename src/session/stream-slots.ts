import { RozError } from "../errors/index.ts";
import type { Principal } from "./ports.ts";

/**
 * Caps the streams open at once per API key (per tenant in open mode), so that one key
 * cannot hold unlimited streams (and their memory). `acquire` throws `resource_exhausted`
 * beyond the cap; otherwise it returns the release, which is idempotent.
 */
export class StreamSlots {
  readonly #max: number;
  readonly #open = new Map<string, number>();

  /** `max` 0 means no cap. */
  constructor(max: number) {
    this.#max = max;
  }

  acquire(principal: Principal): () => void {
    const key = principal.keyId ?? `tenant:${principal.tenantId}`;
    const open = this.#open.get(key) ?? 0;
    if (this.#max > 0 && open >= this.#max) {
      throw new RozError("resource_exhausted", `this key already has ${open} open streams; at most ${this.#max} are allowed`);
    }
    this.#open.set(key, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#open.get(key) ?? 1) - 1;
      if (left <= 0) this.#open.delete(key);
      else this.#open.set(key, left);
    };
  }
}
