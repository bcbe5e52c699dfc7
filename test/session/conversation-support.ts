/**
 * Steps the fork and rollback suites share: a plain turn against the fake, the rollback
 * request, what the model was shown, and the REST transcript's per-turn marks.
 */
import type { RecordedRequest } from "../support/fake-openai/index.ts";
import type { SessionClient, SessionRequestInit } from "../support/session-client.ts";
import { readTurn, rq, turnCompleteOf } from "../support/session-protocol.ts";
import type { SessionFixture } from "./fixture.ts";

export const rollback = (turns: number): SessionRequestInit => ({ request: { case: "rollback", value: { turns } } });

/** Runs one turn: the fake answers `answer` to `prompt`. */
export async function turn(fx: SessionFixture, client: SessionClient, prompt: string, answer = `answer to ${prompt}`): Promise<void> {
  fx.fake.plan({ text: answer });
  client.send(rq.user(prompt));
  const done = turnCompleteOf(await readTurn(client));
  if (done.stopReason !== "end_turn") throw new Error(`turn "${prompt}" ended with ${done.stopReason}`);
}

/** Everything the model was shown in `request` (its messages), as one string to search. */
export const shown = (request: RecordedRequest): string => JSON.stringify(request.body.messages);

/** The transcript's turns as `{turn, user, rolled_back?, forked_from?}`. */
export async function marks(fx: SessionFixture, sessionId: string): Promise<Record<string, unknown>[]> {
  const { status, json } = await fx.rest("GET", `/v1/sessions/${sessionId}/messages?format=turns`);
  if (status !== 200) throw new Error(`transcript of ${sessionId}: ${status} ${JSON.stringify(json)}`);
  return (json.turns as Record<string, any>[]).map((t) => ({
    turn: t.turn,
    user: t.user.content,
    ...(t.rolled_back ? { rolled_back: true } : {}),
    ...(t.forked_from ? { forked_from: t.forked_from } : {}),
  }));
}
