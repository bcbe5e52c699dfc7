import type { Socket } from "node:net";

/**
 * The per-address connection cap: counts each admitted connection against its remote address
 * until it closes. A cap of 0 admits everything.
 */
export class AddressCap {
  readonly #cap: number;
  /** Open connections per remote address. */
  readonly #open = new Map<string, number>();

  constructor(cap: number) {
    this.#cap = cap;
  }

  /** Counts the connection against its address's cap; false when it is over the cap (the caller closes it). */
  admit(socket: Socket): boolean {
    if (this.#cap <= 0) return true;
    const address = socket.remoteAddress ?? "";
    const open = this.#open.get(address) ?? 0;
    if (open >= this.#cap) return false;
    this.#open.set(address, open + 1);
    socket.once("close", () => {
      const left = (this.#open.get(address) ?? 1) - 1;
      if (left <= 0) this.#open.delete(address);
      else this.#open.set(address, left);
    });
    return true;
  }
}
