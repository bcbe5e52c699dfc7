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

  /** Whether `principal`'s key holds as many streams as it may. */
  full(principal: Principal): boolean {
    return this.#max > 0 && (this.#open.get(slotKey(principal)) ?? 0) >= this.#max;
  }

  /** The `resource_exhausted` error `acquire` throws for `principal` while `full`, else undefined. */
  refusal(principal: Principal): RozError | undefined {
    if (!this.full(principal)) return undefined;
    return new RozError("resource_exhausted", `this key already has ${this.#open.get(slotKey(principal))} open streams; at most ${this.#max} are allowed`);
  }

  acquire(principal: Principal): () => void {
    const refused = this.refusal(principal);
    if (refused) throw refused;
    const key = slotKey(principal);
    this.#open.set(key, (this.#open.get(key) ?? 0) + 1);
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

const slotKey = (principal: Principal): string => principal.keyId ?? `tenant:${principal.tenantId}`;
