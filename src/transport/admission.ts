import type { Socket } from "node:net";
import { KeyCounts } from "../domain/index.ts";

/**
 * The per-address connection cap: counts each admitted connection against its remote address
 * until it closes. A cap of 0 admits everything.
 */
export class AddressCap {
  readonly #cap: number;
  /** Open connections per remote address. */
  readonly #open = new KeyCounts();

  constructor(cap: number) {
    this.#cap = cap;
  }

  /** Counts the connection against its address's cap; false when it is over the cap (the caller closes it). */
  admit(socket: Socket): boolean {
    if (this.#cap <= 0) return true;
    const address = socket.remoteAddress ?? "";
    if (this.#open.of(address) >= this.#cap) return false;
    socket.once("close", this.#open.hold(address));
    return true;
  }
}
