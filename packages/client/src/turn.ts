import { fromInBand, type RozError } from "./errors.ts";
import type { EventOf, SessionEvent } from "./events.ts";
import { Feed } from "./feed.ts";
import type { TurnResult } from "./options.ts";

/**
 * One message sent and the turn that answers it: iterate it for the turn's events (from the
 * message's own `input_update`s to its `turn_complete`), or await `done` for the result. A
 * steered message's turn is the one it joined. `done` rejects with a RozError when the
 * message was refused (`turn_in_progress`, `resource_exhausted`, …), dropped from the queue
 * (`dropped`) or the session ended first (`session_ended`); the iteration then throws it.
 */
export class Turn implements AsyncIterable<SessionEvent> {
  /** The message's id (sent as `message_id`). */
  readonly messageId: string;
  readonly done: Promise<TurnResult>;
  readonly #feed = new Feed<SessionEvent>();
  #resolve!: (result: TurnResult) => void;
  #reject!: (error: RozError) => void;
  /** The turn it is part of: its own, or (steered) the one it joined. */
  turnId: string;
  #settled = false;

  constructor(messageId: string) {
    this.messageId = messageId;
    this.turnId = messageId;
    this.done = new Promise<TurnResult>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // A caller that only iterates, or neither, must not crash the process with an unhandled rejection.
    this.done.catch(() => undefined);
  }

  get settled(): boolean {
    return this.#settled;
  }

  push(ev: SessionEvent): void {
    this.#feed.push(ev);
  }

  complete(result: TurnResult): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#feed.end();
    this.#resolve(result);
  }

  fail(error: RozError): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#feed.end(error);
    this.#reject(error);
  }

  [Symbol.asyncIterator](): AsyncIterator<SessionEvent> {
    return this.#feed[Symbol.asyncIterator]();
  }
}

/** What a turn's events add up to while it runs. */
export interface Running {
  id: string;
  text: string;
  thinking: string;
  error?: RozError | undefined;
}

/** The result a `turn_complete` gives the turn that `running` accumulated. */
export function resultOf(ev: EventOf<"turn_complete">, running: Running | undefined): TurnResult {
  const u = ev.usage;
  return {
    messageId: ev.messageId,
    text: running?.text ?? "",
    thinking: running?.thinking ?? "",
    stopReason: ev.stopReason,
    usage: {
      inputTokens: u?.inputTokens ?? 0,
      outputTokens: u?.outputTokens ?? 0,
      cacheReadTokens: u?.cacheReadTokens ?? 0,
      cacheCreationTokens: u?.cacheCreationTokens ?? 0,
    },
    costUsd: ev.costUsd,
    ...(running?.error ? { error: running.error } : {}),
  };
}

/** The in-band error of a running turn, as its result carries it. */
export const turnError = (ev: EventOf<"error">): RozError => fromInBand(ev);
