import type { ModelMessage } from "../models/index.ts";
import type { SessionPersistence } from "./ports.ts";
import { decodeJson, decodeState, type SessionSnapshot } from "./snapshot.ts";
import { StoredHistory } from "./stored-history.ts";

/**
 * The snapshot of a stored session whose state row is `state`, with what the store has of its
 * message lists: read from its message rows, or, for a state stored whole before message
 * rows, from the state itself (its next write then stores every row). Undefined when the
 * state or its rows cannot be read.
 */
export async function loadSnapshot(
  persistence: Pick<SessionPersistence, "readMessages">,
  tenantId: string,
  sessionId: string,
  state: string,
): Promise<{ snapshot: SessionSnapshot; stored: StoredHistory } | undefined> {
  const decoded = decodeState(state);
  if (decoded === undefined) return undefined;
  if (decoded.version === 1) return { snapshot: decoded, stored: new StoredHistory() };
  const lists = await persistence.readMessages(tenantId, sessionId);
  const { version: _, historyLength, startHistoryLength, ...rest } = decoded;
  if (!lists || lists.history.length < historyLength || lists.start.length < (startHistoryLength ?? 0)) return undefined;
  try {
    const history = lists.history.slice(0, historyLength).map((text) => decodeJson(text) as ModelMessage);
    const startHistory =
      startHistoryLength === undefined ? undefined : lists.start.slice(0, startHistoryLength).map((text) => decodeJson(text) as ModelMessage);
    const snapshot: SessionSnapshot = { version: 1, ...rest, history, ...(startHistory !== undefined ? { startHistory } : {}) };
    return { snapshot, stored: new StoredHistory(history, true) };
  } catch {
    return undefined;
  }
}
