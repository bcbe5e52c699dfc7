// §11 rollback through real clients: the rolled-back turns leave what the model sees next,
// the transcript keeps them marked, turn numbers are never reused, and the refusals of
// rollback (0, beyond the remaining turns, while a turn runs) are in-band errors.
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AgentService, SessionRequestSchema } from "../../src/gen/roz/v1/agent_pb.js";
import type { ClientKind } from "../support/session-client.ts";
import { nextOf, readTurn, rq, tool, turnCompleteOf } from "../support/session-protocol.ts";
import { marks, rollback, shown, turn } from "./conversation-support.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";

let fx: SessionFixture;
beforeAll(async () => {
  fx = await startSessionFixture();
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

describe.each<ClientKind>(["grpc-js", "connect"])("rollback on StreamSession (%s)", (kind) => {
  it("removes the last turns from what the model sees; the transcript keeps them marked; numbers go on", async () => {
    const { client, started } = await fx.start(kind);
    await turn(fx, client, "first question");
    await turn(fx, client, "second question");
    await turn(fx, client, "third question");
    client.send(rollback(2));
    expect(await nextOf(client, "rolledBack")).toMatchObject({ turns: 2, remainingTurns: 1 });

    await turn(fx, client, "fourth question");
    const seen = shown(fx.requests().at(-1)!);
    expect(seen).toContain("first question");
    expect(seen).toContain("answer to first question");
    expect(seen).toContain("fourth question");
    for (const gone of ["second question", "answer to second question", "third question", "answer to third question"]) expect(seen).not.toContain(gone);

    expect(await marks(fx, started.sessionId)).toEqual([
      { turn: 1, user: "first question" },
      { turn: 2, user: "second question", rolled_back: true },
      { turn: 3, user: "third question", rolled_back: true },
      { turn: 4, user: "fourth question" },
    ]);
    // Rolled-back turns no longer count: two are left (1 and 4).
    client.send(rollback(3));
    expect(await nextOf(client, "error")).toMatchObject({ code: "invalid_argument" });
    client.send(rollback(2));
    expect(await nextOf(client, "rolledBack")).toMatchObject({ turns: 2, remainingTurns: 0 });
    await turn(fx, client, "fresh start");
    expect(shown(fx.requests().at(-1)!)).not.toContain("first question");
  });

  it("refuses 0, more than the remaining turns, and a rollback while a turn runs; the session goes on", async () => {
    const { client } = await fx.start(kind, { tools: [tool("read_file")] });
    client.send(rollback(1));
    expect(await nextOf(client, "error")).toMatchObject({ code: "invalid_argument" });
    await turn(fx, client, "only question");
    client.send(rollback(0));
    expect(await nextOf(client, "error")).toMatchObject({ code: "invalid_argument" });
    client.send(rollback(2));
    expect(await nextOf(client, "error")).toMatchObject({ code: "invalid_argument" });

    fx.fake.plan({ toolCalls: [{ id: "call_r", name: "read_file", arguments: { path: "a" } }] }, { text: "done reading" });
    client.send(rq.user("read a"));
    const request = await nextOf(client, "toolRequest");
    client.send(rollback(1));
    expect(await nextOf(client, "error")).toMatchObject({ code: "turn_in_progress" });
    client.send(rq.toolResult(request.toolCallId, "contents"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    client.send(rollback(1));
    expect(await nextOf(client, "rolledBack")).toMatchObject({ turns: 1, remainingTurns: 1 });
  });
});

it("rollback over SendToSession: the attached downlink gets RolledBack (connect)", async () => {
  const sessionManager = new Http2SessionManager(fx.server.url);
  const client = createClient(AgentService, createConnectTransport({ baseUrl: fx.server.url, httpVersion: "2", sessionManager }));
  try {
    const { client: stream, started } = await fx.start("connect");
    await turn(fx, stream, "kept question");
    await turn(fx, stream, "dropped question");
    await client.sendToSession({ sessionId: started.sessionId, request: create(SessionRequestSchema, rollback(1)) });
    expect(await nextOf(stream, "rolledBack")).toMatchObject({ turns: 1, remainingTurns: 1 });
    await turn(fx, stream, "next question");
    expect(shown(fx.requests().at(-1)!)).not.toContain("dropped question");
  } finally {
    sessionManager.abort();
  }
});
