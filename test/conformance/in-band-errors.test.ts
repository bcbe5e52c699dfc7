// session-behaviour.md §1, §2 and §8 to the letter: which code, which `retryable`, fatal or not.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MemoryPersistence } from "../support/memory-persistence.ts";
import { RozError } from "../../src/errors/index.ts";
import type { ClientKind } from "../support/session-client.ts";
import { nextOf, readTurn, rq, tool, turnCompleteOf, responseValue } from "../support/session-protocol.ts";
import { GRPC, startWorld, type World } from "./support.ts";

/** A tool list that decodes as protobuf but is refused by the server (its schema is not an object's). */
const badTools = [tool("probe", { parameters: { type: "string" } })];

describe("in-band errors", () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterEach(() => world.reset());
  afterAll(() => world?.close());

  describe.each<ClientKind>(["grpc-js", "connect"])("%s", (kind) => {
    it("ai_mode react, ooda_re_act and the aliases ooda, ooda_react (any case) each run a turn; another value runs as react, with no error", async () => {
      const { client } = await world.start(kind);
      for (const aiMode of ["react", "ooda_re_act", "ooda", "ooda_react", "OODA", " React ", "chaos"]) {
        client.send(rq.user("hi", { aiMode, messageId: `m-${aiMode}` }));
        const turn = await readTurn(client);
        expect(valuesOfError(turn), aiMode).toEqual([]);
        expect(turnCompleteOf(turn)).toMatchObject({ messageId: `m-${aiMode}`, stopReason: "end_turn" });
      }
    });

    it("before start, a request is answered by what it is even when its content is refused: user_message and register_tools → no_session", async () => {
      const client = world.open(kind);
      client.send(rq.user("hi", { tools: badTools }));
      expect(responseValue(await client.next(), "error")).toMatchObject({ code: "no_session", retryable: false });
      client.send(rq.register(badTools));
      expect(responseValue(await client.next(), "error")).toMatchObject({ code: "no_session", retryable: false });
      // The stream goes on: a valid start still works.
      client.send(rq.start());
      expect((await client.next()).response.case).toBe("sessionStarted");
    });

    it("a second start is already_started even when it would not decode; a refused user_message after start is a non-fatal invalid_argument", async () => {
      const { client } = await world.start(kind);
      client.send(rq.start({ tools: badTools }));
      expect(await nextOf(client, "error")).toMatchObject({ code: "already_started", retryable: false });
      client.send(rq.user("hi", { tools: badTools }));
      expect(await nextOf(client, "error")).toMatchObject({ code: "invalid_argument", retryable: false });
      client.send(rq.user("hi"));
      expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    });
  });
});

describe("§8 retryable flags of errors the server causes", () => {
  describe("a non-fatal internal error is retryable", () => {
    let world: World;
    beforeAll(async () => {
      const persistence = new MemoryPersistence();
      persistence.putFeedback = () => Promise.reject(new Error("the store is down"));
      world = await startWorld({}, { persistence });
    });
    afterEach(() => world.reset());
    afterAll(() => world?.close());

    it.each<ClientKind>(["grpc-js", "connect"])(
      "feedback that cannot be stored → SessionError{internal, retryable:true}; the session goes on (%s)",
      async (kind) => {
        const { client, started } = await world.start(kind);
        client.send({ request: { case: "feedback", value: { sessionId: started.sessionId, messageId: "m1", rating: "up" } } });
        expect(await nextOf(client, "error")).toMatchObject({ code: "internal", retryable: true });
        client.send(rq.user("hi"));
        expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
      },
    );
  });

  describe("a message over the size limit", () => {
    let world: World;
    beforeAll(async () => {
      world = await startWorld({ ROZ_MAX_MESSAGE_BYTES: "16KiB" });
    });
    afterEach(() => world.reset());
    afterAll(() => world?.close());

    it.each<ClientKind>(["grpc-js", "connect"])("→ SessionError{resource_exhausted, retryable:true}, then RESOURCE_EXHAUSTED (%s)", async (kind) => {
      const { client } = await world.start(kind);
      client.send(rq.user("x".repeat(64 * 1024)));
      expect(await nextOf(client, "error")).toMatchObject({ code: "resource_exhausted", retryable: true });
      expect((await client.status).code).toBe(GRPC.RESOURCE_EXHAUSTED);
    });
  });
});

describe("§1 credentials on StreamSession", () => {
  let world: World;
  let failure: () => Error;
  beforeAll(async () => {
    world = await startWorld({}, { authenticate: async () => Promise.reject(failure()) });
  });
  afterEach(() => world.reset());
  afterAll(() => world?.close());

  it.each<{ name: string; error: () => Error; code: string; retryable: boolean; status: number }>([
    {
      name: "wrong credentials",
      error: () => new RozError("unauthenticated", "unknown key"),
      code: "unauthenticated",
      retryable: false,
      status: GRPC.UNAUTHENTICATED,
    },
    {
      name: "a key without the scope",
      error: () => new RozError("permission_denied"),
      code: "permission_denied",
      retryable: false,
      status: GRPC.PERMISSION_DENIED,
    },
    { name: "a failure of the server itself", error: () => new Error("the store is down"), code: "internal", retryable: true, status: GRPC.INTERNAL },
  ])("$name → SessionError{$code, retryable:$retryable} first, then the status", async ({ error, code, retryable, status }) => {
    failure = error;
    const client = world.open("grpc-js");
    client.send(rq.start());
    const first = await client.next();
    expect(responseValue(first, "error")).toMatchObject({ code, retryable });
    expect(first.seq).toBe(0n);
    expect((await client.status).code).toBe(status);
  });
});

function valuesOfError(turn: Awaited<ReturnType<typeof readTurn>>) {
  return turn.filter((r) => r.response.case === "error").map((r) => r.response.value);
}
