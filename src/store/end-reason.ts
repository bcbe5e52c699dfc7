/**
 * Why an ended session ended (REST `end_reason`): `completed`, the last attached client
 * half-closed; `client`, a client ended it (`cancel_session`, REST DELETE); `abandoned`, nobody
 * re-attached within the detach grace (also when its node died); `error`, an error ended it.
 */
export const sessionEndReasons = ["completed", "client", "abandoned", "error"] as const;
export type SessionEndReason = (typeof sessionEndReasons)[number];

/** The end reason an ended status implies when none more precise was stored. */
export const defaultEndReason: Record<"completed" | "cancelled" | "error", SessionEndReason> = {
  completed: "completed",
  cancelled: "client",
  error: "error",
};
