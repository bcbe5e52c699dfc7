import type { OutgoingEvent } from "./types.ts";

/**
 * One stream attached to a session. `deliver` receives every numbered response from the
 * moment of attaching, in order; `ended` says the session is over (nothing more will come).
 */
export interface Attachment {
  deliver(item: OutgoingEvent): void;
  ended(): void;
}

/** The streams attached to one session: every numbered response goes to each, in the session's order. */
export class FanOut {
  readonly #attachments = new Set<Attachment>();

  get size(): number {
    return this.#attachments.size;
  }

  has(attachment: Attachment): boolean {
    return this.#attachments.has(attachment);
  }

  add(attachment: Attachment): void {
    this.#attachments.add(attachment);
  }

  delete(attachment: Attachment): void {
    this.#attachments.delete(attachment);
  }

  /** Detaches every stream; returns those that were attached. */
  clear(): Attachment[] {
    const attached = [...this.#attachments];
    this.#attachments.clear();
    return attached;
  }

  /** To `to` only (when it is still attached), else to every attached stream. */
  deliver(item: OutgoingEvent, to?: Attachment): void {
    if (to) {
      if (this.#attachments.has(to)) to.deliver(item);
    } else for (const a of this.#attachments) a.deliver(item);
  }
}
