import type { Attachment } from "./fan-out.ts";
import type { OutgoingEvent } from "./types.ts";

/**
 * The attachment of a re-attaching stream (§6): live events that arrive while older ones are
 * replayed wait here, so the stream sees no gap and no duplicate at the seam. `live()` lets
 * them through once the replay is written, then the session's end if it came meanwhile.
 */
export class ReplayingAttachment implements Attachment {
  readonly #deliver: (item: OutgoingEvent) => void;
  readonly #ended: () => void;
  #pending: OutgoingEvent[] | undefined = [];
  #endedMeanwhile = false;

  constructor(deliver: (item: OutgoingEvent) => void, ended: () => void) {
    this.#deliver = deliver;
    this.#ended = ended;
  }

  deliver(item: OutgoingEvent): void {
    if (this.#pending) this.#pending.push(item);
    else this.#deliver(item);
  }

  ended(): void {
    if (this.#pending) this.#endedMeanwhile = true;
    else this.#ended();
  }

  /** The replay is written: the held live events go out, then the end if it came meanwhile. */
  live(): void {
    const held = this.#pending ?? [];
    this.#pending = undefined;
    for (const item of held) this.#deliver(item);
    if (this.#endedMeanwhile) this.#ended();
  }

  /** The replay failed: what was held is dropped. */
  drop(): void {
    this.#pending = undefined;
  }
}
