import type { StoredText } from "../domain/index.ts";

/**
 * A session's message lists, stored a row per message so that a write adds what changed
 * rather than the whole conversation again: `history`, what its model sees now, and `start`,
 * the conversation it started with (written once).
 */
export type MessageList = "history" | "start";

/**
 * Rows of one message list to write: `messages` (one opaque JSON text each) at positions
 * `from`, `from + 1`, …, replacing rows already there; with `truncate`, the rows past them
 * are deleted too (the list got shorter). Rows past the list's length in its state are
 * never read, so an append needs no delete.
 */
export interface MessageRows {
  list: MessageList;
  from: number;
  messages: readonly StoredText[];
  truncate?: boolean;
}

/**
 * A session's state as a write stores it, in one transaction: the state row (opaque text,
 * small: everything but the message lists) and the message rows that changed since the
 * last write. A text alone is a state row without message rows.
 */
export type SessionStateWrite = StoredText | { state: StoredText; messages: readonly MessageRows[] };

/** A session's stored message lists, each in position order (JSON texts as written). */
export type StoredMessages = Record<MessageList, string[]>;

/** The state row and message rows of `write`. */
export function stateWriteParts(write: SessionStateWrite): { state: StoredText; messages: readonly MessageRows[] } {
  return typeof write === "string" || !("messages" in write) ? { state: write, messages: [] } : write;
}

export interface MessageStore {
  /** The session's stored message lists; undefined when the session is unknown or another tenant's. */
  listSessionMessages(tenantId: string, sessionId: string): Promise<StoredMessages | undefined>;
}
