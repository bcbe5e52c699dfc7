import { rest, type TurnJson } from "../api/rest.ts";

/**
 * Forks `sessionId` through the turn whose message is `messageId` (its number read from the
 * stored transcript: the view does not know turn numbers); resolves with the new session's id.
 */
export async function forkThrough(sessionId: string, messageId: string): Promise<string> {
  const path = `/v1/sessions/${encodeURIComponent(sessionId)}`;
  const { turns } = await rest<{ turns: TurnJson[] }>("GET", `${path}/messages?format=turns`);
  const turn = turns.findLast((t) => t.message_id === messageId)?.turn;
  if (turn === undefined) throw new Error("this turn is not stored yet");
  return (await rest<{ id: string }>("POST", `${path}/fork`, { through_turn: turn })).id;
}
