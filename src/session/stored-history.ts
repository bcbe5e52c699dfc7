import type { StoredText } from "../domain/index.ts";
import type { ModelMessage } from "../models/index.ts";
import type { MessageRows, SessionStateWrite } from "../store/index.ts";
import { encodeJson, type SessionSnapshot, type SessionStateRow } from "./snapshot.ts";

/**
 * What of a session's message lists the store has, by message identity. A write sends the
 * messages after the longest stored prefix that is still the same objects, and the start
 * history once: history messages never change in place (a rewrite, such as compaction or a
 * rollback, makes new ones), so each message is encoded once, when it is first stored.
 * Neither does a history list once the agent hands it out (it replaces its list instead of
 * editing it), so the list written is kept as it is, not copied.
 */
export class StoredHistory {
  #history: readonly ModelMessage[];
  #start: boolean;

  /** `history`: the messages the store has, in order; `start`: whether it has the start history. */
  constructor(history: readonly ModelMessage[] = [], start = false) {
    this.#history = history;
    this.#start = start;
  }

  /**
   * The rows that bring the store from what it has to `history` (and to `start`, when it does
   * not have that yet), encoded; `commit` records them as stored once their write succeeded.
   */
  async changes(history: readonly ModelMessage[], start: readonly ModelMessage[] | undefined): Promise<{ rows: MessageRows[]; commit: () => void }> {
    const stored = this.#history;
    let from = 0;
    const common = Math.min(stored.length, history.length);
    while (from < common && stored[from] === history[from]) from++;
    const rows: MessageRows[] = [];
    if (from < history.length || history.length < stored.length) {
      rows.push({ list: "history", from, messages: await encodeAll(history.slice(from)), ...(history.length < stored.length ? { truncate: true } : {}) });
    }
    const storeStart = !this.#start && start !== undefined && start.length > 0;
    if (storeStart) rows.push({ list: "start", from: 0, messages: await encodeAll(start) });
    return {
      rows,
      commit: () => {
        this.#history = history;
        if (storeStart) this.#start = true;
      },
    };
  }
}

const encodeAll = (messages: readonly ModelMessage[]): Promise<StoredText[]> => Promise.all(messages.map(encodeJson));

/**
 * The write that stores `snapshot`: its state row, and the message rows `stored` lacks;
 * `commit` once the write succeeded (the next write then sends only what follows).
 */
export async function stateWrite(stored: StoredHistory, snapshot: SessionSnapshot): Promise<{ write: SessionStateWrite; commit: () => void }> {
  const { version: _, history, startHistory, ...rest } = snapshot;
  const row: SessionStateRow = {
    version: 2,
    ...rest,
    historyLength: history.length,
    ...(startHistory !== undefined ? { startHistoryLength: startHistory.length } : {}),
  };
  const { rows, commit } = await stored.changes(history, startHistory);
  return { write: { state: await encodeJson(row), messages: rows }, commit };
}
