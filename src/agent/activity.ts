import type { ActivityState, AgentEvent, ApprovalDetails } from "./types.ts";

/**
 * Emits `activity` events. Every change of state or detail is emitted; only an exact
 * repeat of the last emitted (state, detail) is coalesced (session-behaviour.md §5).
 */
export function createActivityReporter(
  emit: (event: AgentEvent) => void,
): (state: ActivityState, detail?: string, approval?: ApprovalDetails) => void {
  let last: string | undefined;
  return (state, detail = "", approval) => {
    const key = `${state}\u0000${detail}`;
    if (key === last) return;
    last = key;
    emit({ type: "activity", state, detail, ...(approval ? { approval } : {}) });
  };
}
