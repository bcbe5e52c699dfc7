import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { readTurn, rq, textOf, turnCompleteOf, valuesOf } from "../support/session-protocol.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

let fx: SessionFixture;
beforeAll(async () => {
  fx = await startSessionFixture();
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

it("a provider's burst of deltas reaches the client merged, complete and in order", async () => {
  const { client } = await fx.start("grpc-js");
  fx.fake.plan({ tokens: 5000 });
  client.send(rq.user("go"));
  const turn = await readTurn(client, 30_000);
  expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
  expect(textOf(turn)).toBe("tok ".repeat(5000));
  // Merged: far fewer messages than tokens (each still names the turn's message).
  const deltas = valuesOf(turn, "textDelta");
  expect(deltas.length).toBeLessThan(5000 / 4);
  expect(new Set(deltas.map((d) => d.messageId)).size).toBe(1);
});
