import { KeyCounts } from "../domain/index.ts";
import { RozError } from "../errors/index.ts";
import type { Principal } from "./ports.ts";

/**
 * Caps the streams open at once per API key (per tenant in open mode), so that one key
 * cannot hold unlimited streams (and their memory). `acquire` throws `resource_exhausted`
 * beyond the cap; otherwise it returns the release, which is idempotent.
 */
export class StreamSlots {
  readonly #max: number;
  readonly #open = new KeyCounts();

  /** `max` 0 means no cap. */
  constructor(max: number) {
    this.#max = max;
  }

  /** Whether `principal`'s key holds as many streams as it may. */
  full(principal: Principal): boolean {
    return this.#max > 0 && this.#open.of(slotKey(principal)) >= this.#max;
  }

  /** The `resource_exhausted` error `acquire` throws for `principal` while `full`, else undefined. */
  refusal(principal: Principal): RozError | undefined {
    if (!this.full(principal)) return undefined;
    return new RozError("resource_exhausted", `this key already has ${this.#open.of(slotKey(principal))} open streams; at most ${this.#max} are allowed`);
  }

  acquire(principal: Principal): () => void {
    const refused = this.refusal(principal);
    if (refused) throw refused;
    return this.#open.hold(slotKey(principal));
  }
}

const slotKey = (principal: Principal): string => principal.keyId ?? `tenant:${principal.tenantId}`;
