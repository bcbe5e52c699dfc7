// §11 over REST: POST /v1/sessions/{id}/fork (201, detached, attachable by id) and
// POST /v1/sessions/{id}/rollback (200 {turns, remaining_turns}) on a live session and on a
// stored one after a restart, with what the fake model receives afterwards; bad input is a
// JSON 4xx like every other route.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { marks, rollback, shown, turn } from "../session/conversation-support.ts";
import { type SessionFixture, startSessionFixture } from "../session/fixture.ts";
import type { SessionClient } from "../support/session-client.ts";
import { nextOf, readTurn, rq, tool, turnCompleteOf } from "../support/session-protocol.ts";

const resume = (sessionId: string, afterSeq: number) => ({ request: { case: "resume", value: { sessionId, afterSeq: BigInt(afterSeq) } } }) as const;

/** Attaches a new grpc-js stream to `sessionId` from its last seq (only live events follow). */
async function attach(fx: SessionFixture, sessionId: string): Promise<SessionClient> {
  const { json } = await fx.rest("GET", `/v1/sessions/${sessionId}`);
  const client = fx.open("grpc-js");
  client.send(resume(sessionId, json.last_seq));
  return client;
}

describe("on a live server", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    // A fork waits detached until a client attaches: long enough for a loaded machine.
    fx = await startSessionFixture({ env: { ROZ_DETACH_GRACE_MS: "60000" } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it("POST fork → 201 with the new session, detached; it is attachable by id and carries the source's conversation", async () => {
    const { client: source, started: src } = await fx.start("connect", { tools: [tool("read_file")] });
    await turn(fx, source, "rest source one");
    await turn(fx, source, "rest source two");
    const { status, json } = await fx.rest("POST", `/v1/sessions/${src.sessionId}/fork`, { through_turn: 1 });
    expect(status).toBe(201);
    expect(json).toMatchObject({ status: "detached", model: src.model, turn_count: 1, attached_streams: 0 });
    expect(json.id).not.toBe(src.sessionId);
    expect((await fx.rest("GET", `/v1/sessions/${json.id}`)).json.status).toBe("detached");

    const forked = await attach(fx, json.id);
    await turn(fx, forked, "rest fork asks");
    const seen = shown(fx.requests().at(-1)!);
    expect(seen).toContain("rest source one");
    expect(seen).not.toContain("rest source two");
    expect(await marks(fx, json.id)).toEqual([
      { turn: 1, user: "rest source one", forked_from: { session_id: src.sessionId, turn: 1 } },
      { turn: 2, user: "rest fork asks" },
    ]);
    // An empty body forks through the last ended turn.
    const all = await fx.rest("POST", `/v1/sessions/${src.sessionId}/fork`, {});
    expect(all).toMatchObject({ status: 201, json: { turn_count: 2 } });
    await fx.rest("DELETE", `/v1/sessions/${all.json.id}`);
  });

  it("POST rollback on a live session → 200 {turns, remaining_turns}; attached streams get RolledBack", async () => {
    const { client, started } = await fx.start("grpc-js");
    await turn(fx, client, "live one");
    await turn(fx, client, "live two");
    const { status, json } = await fx.rest("POST", `/v1/sessions/${started.sessionId}/rollback`, { turns: 1 });
    expect({ status, json }).toEqual({ status: 200, json: { turns: 1, remaining_turns: 1 } });
    expect(await nextOf(client, "rolledBack")).toMatchObject({ turns: 1, remainingTurns: 1 });
    await turn(fx, client, "live three");
    expect(shown(fx.requests().at(-1)!)).not.toContain("live two");
  });

  it("bad input and refusals are JSON errors", async () => {
    const { client, started } = await fx.start("grpc-js", { tools: [tool("read_file")] });
    await turn(fx, client, "the one turn");
    const id = started.sessionId;
    const error = async (path: string, body: unknown) => {
      const { status, json } = await fx.rest("POST", path, body);
      return { status, code: json?.error?.code };
    };
    expect(await error(`/v1/sessions/${id}/rollback`, {})).toMatchObject({ status: 400 });
    expect(await error(`/v1/sessions/${id}/rollback`, { turns: -1 })).toMatchObject({ status: 400 });
    expect(await error(`/v1/sessions/${id}/rollback`, { turns: 0 })).toEqual({ status: 400, code: "invalid_argument" });
    expect(await error(`/v1/sessions/${id}/rollback`, { turns: 2 })).toEqual({ status: 400, code: "invalid_argument" });
    expect(await error(`/v1/sessions/${randomUUID()}/rollback`, { turns: 1 })).toEqual({ status: 404, code: "not_found" });
    expect(await error(`/v1/sessions/${id}/fork`, { through_turn: 0 })).toEqual({ status: 400, code: "invalid_argument" });
    expect(await error(`/v1/sessions/${id}/fork`, { through_turn: 9 })).toEqual({ status: 400, code: "invalid_argument" });
    expect(await error(`/v1/sessions/${randomUUID()}/fork`, {})).toEqual({ status: 404, code: "not_found" });
    expect(await error(`/v1/sessions/not-a-uuid/fork`, {})).toMatchObject({ status: 400 });

    fx.fake.plan({ toolCalls: [{ id: "call_busy", name: "read_file", arguments: { path: "a" } }] }, { text: "read" });
    client.send(rq.user("read a"));
    const request = await nextOf(client, "toolRequest");
    expect(await error(`/v1/sessions/${id}/rollback`, { turns: 1 })).toEqual({ status: 412, code: "turn_in_progress" });
    client.send(rq.toolResult(request.toolCallId, "contents"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
  });
});

it("rolled-back turns stay out after a restart; a stored session can be rolled back over REST before anyone re-attaches", async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "roz-rollback-"));
  let fx: SessionFixture | undefined;
  try {
    fx = await startSessionFixture({ env: { ROZ_DATA_DIR: dataDir, ROZ_DETACH_GRACE_MS: "60000" } });
    const { client, started } = await fx.start("grpc-js");
    const sessionId = started.sessionId;
    for (const q of ["restart one", "restart two", "restart three"]) await turn(fx, client, q);
    client.send(rollback(1));
    expect(await nextOf(client, "rolledBack")).toMatchObject({ turns: 1, remainingTurns: 2 });
    await fx.close();

    fx = await startSessionFixture({ env: { ROZ_DATA_DIR: dataDir, ROZ_DETACH_GRACE_MS: "60000" } });
    expect((await fx.rest("GET", `/v1/sessions/${sessionId}`)).json.status).toBe("detached");
    expect(await fx.rest("POST", `/v1/sessions/${sessionId}/rollback`, { turns: 1 })).toEqual({ status: 200, json: { turns: 1, remaining_turns: 1 } });

    const again = await attach(fx, sessionId);
    await turn(fx, again, "restart four");
    const seen = shown(fx.requests().at(-1)!);
    expect(seen).toContain("restart one");
    expect(seen).not.toContain("restart two");
    expect(seen).not.toContain("restart three");
    // Numbers go on across the restart.
    expect(await marks(fx, sessionId)).toEqual([
      { turn: 1, user: "restart one" },
      { turn: 2, user: "restart two", rolled_back: true },
      { turn: 3, user: "restart three", rolled_back: true },
      { turn: 4, user: "restart four" },
    ]);
    await fx.reset();
  } finally {
    await fx?.close();
    await rm(dataDir, { recursive: true, force: true });
  }
});
