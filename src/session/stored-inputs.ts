import { decodeState } from "./snapshot.ts";
import { WaitingInputs, type WaitingInputView } from "./waiting-inputs.ts";

/** The user messages that waited when a session's state was stored (none when it has no readable state). */
export function storedWaitingInputs(state: string | undefined): WaitingInputView[] {
  const decoded = state === undefined ? undefined : decodeState(state);
  return new WaitingInputs(decoded?.waitingInputs).view();
}
