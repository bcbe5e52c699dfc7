import { AsyncQueue } from "../domain/index.ts";
import type { BusMessage } from "./types.ts";

/**
 * The reader side every subscription shares: the one async queue, holding bus messages for one
 * reader, the oldest dropped (and counted) beyond `maxPending` so a slow reader never holds up
 * the bus. Closing stops the reader at once; the reader leaving the loop closes it.
 */
export class MessageQueue extends AsyncQueue<BusMessage> {
  /** `onClose` runs once, when the queue closes (by `close()` or by the reader leaving). */
  constructor(maxPending: number, onClose: () => void) {
    super({ maxPending, onClose, closeOnReturn: true });
  }
}
