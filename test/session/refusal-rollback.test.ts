// §11: a turn the model refused is rolled back by itself as it ends, on each adapter (Chat
// `delta.refusal`, a Responses `refusal` part, Anthropic `stop_reason: refusal`), through the
// fake providers' real stream formats: the next request no longer carries the refused prompt
// or the partial answer, the transcript marks the turn, and the client was told in the
// turn's ActivityUpdate.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { nextOf, readTurn, rq, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { marks, rollback, turn } from "./conversation-support.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

const adapters = [
  ["OpenAI Chat", { provider: "openai", env: { ROZ_OPENAI_API: "chat" } }],
  ["OpenAI Responses", { provider: "openai", env: { ROZ_OPENAI_API: "responses" } }],
  ["Anthropic Messages", { provider: "anthropic" }],
] as const;

describe.each(adapters)("%s", (_name, options) => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture(options);
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("the refused turn leaves the model's context, marked rolled back, with the activity note (grpc-js)", async () => {
    const { client, started } = await fx.start("grpc-js");
    await turn(fx, client, "a harmless question");
    fx.fake.plan({ text: "Partial answer. ", refusal: "I can't help with that." });
    client.send(rq.user("the forbidden request"));
    const refused = await readTurn(client);
    expect(turnCompleteOf(refused).stopReason).toBe("end_turn");
    expect(valuesOf(refused, "activityUpdate").map((a) => a.detail)).toContainEqual(expect.stringContaining("refusal"));

    await turn(fx, client, "a different question");
    const body = JSON.stringify(fx.requests().at(-1)!.body);
    expect(body).toContain("a harmless question");
    expect(body).toContain("a different question");
    for (const gone of ["the forbidden request", "Partial answer", "I can't help"]) expect(body).not.toContain(gone);

    expect(await marks(fx, started.sessionId)).toEqual([
      { turn: 1, user: "a harmless question" },
      { turn: 2, user: "the forbidden request", rolled_back: true },
      { turn: 3, user: "a different question" },
    ]);
    // The refused turn is no longer one to roll back: two are.
    client.send(rollback(3));
    expect(await nextOf(client, "error")).toMatchObject({ code: "invalid_argument" });
    client.send(rollback(2));
    expect(await nextOf(client, "rolledBack")).toMatchObject({ turns: 2, remainingTurns: 0 });
  });
});
