import type { ActivityState, AgentEvent } from "./types.ts";

/** What an activity may say besides its state and detail. */
export type ActivityExtra = Pick<Extract<AgentEvent, { type: "activity" }>, "observing" | "approval">;

/**
 * Emits `activity` events. Every change of state or detail is emitted; only an exact
 * repeat of the last emitted (state, detail) is coalesced (session-behaviour.md §5).
 * An approval question travels with its `waiting_approval` (whose detail is the call id).
 */
export function createActivityReporter(emit: (event: AgentEvent) => void): (state: ActivityState, detail?: string, extra?: ActivityExtra) => void {
  let last: string | undefined;
  return (state, detail = "", extra = {}) => {
    const key = `${state}\u0000${detail}\u0000${extra.observing === true}`;
    if (key === last) return;
    last = key;
    emit({ type: "activity", state, detail, ...extra });
  };
}
