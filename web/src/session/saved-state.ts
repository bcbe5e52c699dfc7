import type { SessionState } from "./timeline.ts";

/** One entry per session: the drawn state and its seq together, so they can never disagree. */
const keyOf = (sessionId: string) => `roz.session.${sessionId}`;

export function loadState(sessionId: string): SessionState | undefined {
  try {
    const raw = sessionStorage.getItem(keyOf(sessionId));
    const state = raw ? (JSON.parse(raw) as SessionState) : undefined;
    return state?.sessionId === sessionId && Number.isInteger(state.lastSeq) ? state : undefined;
  } catch {
    return undefined;
  }
}

/** Saves the state; when it does not fit, forgets it (a reload then replays the session from its start). */
export function saveState(state: SessionState): void {
  try {
    sessionStorage.setItem(keyOf(state.sessionId), JSON.stringify(state));
  } catch {
    sessionStorage.removeItem(keyOf(state.sessionId));
  }
}
