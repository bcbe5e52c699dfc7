// §1 the stream around the session, end to end: keepalives for the whole life of the
// stream, a transport break that detaches (the turn goes on), and authentication.
import type { SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { issueKey } from "../../src/auth/index.ts";
import type { ClientKind } from "../support/session-client.ts";
import { caseOf, nextOf, readTurn, rq, sequenceProblem, startSession, tool, turnCompleteOf, responseValue } from "../support/session-protocol.ts";
import { GRPC, type SessionFixture, startSessionFixture, UUID } from "./fixture.ts";

describe("keepalive every 200 ms", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_KEEPALIVE_INTERVAL_MS: "200" } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  const isKeepalive = (r: SessionResponse): boolean => caseOf(r) === "keepalive";

  it("Keepalive{tokens_used, tokens_max} keeps coming during and between turns, numbered in order (grpc-js)", async () => {
    const { client } = await fx.start("grpc-js", { tools: [tool("hold")], maxContextTokens: 5000 });
    const idle = await nextOf(client, "keepalive");
    expect(idle.tokensMax).toBe(5000);
    expect(idle.tokensUsed).toBe(0);

    fx.fake.plan({ toolCalls: [{ id: "call_hold", name: "hold", arguments: {} }] }, { text: "done holding" });
    client.send(rq.user("hold on", { messageId: "hold" }));
    await nextOf(client, "toolRequest");
    // While the turn waits for the tool, keepalives still come, counting the history so far.
    const during = await nextOf(client, "keepalive");
    expect(during.tokensMax).toBe(5000);
    expect(during.tokensUsed).toBeGreaterThan(0);
    client.send(rq.toolResult("call_hold", "held"));
    const turn = await readTurn(client);
    expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
    const after = await nextOf(client, "keepalive");
    expect(after.tokensUsed).toBeGreaterThan(during.tokensUsed!);
    expect(after.tokensUsed).toBeLessThanOrEqual(5000);

    const all = client.responses.seen;
    expect(all.filter(isKeepalive).length).toBeGreaterThanOrEqual(3);
    expect(sequenceProblem(all)).toBeUndefined();
  });

  it("before start, keepalives carry the counts of an empty session and sequence 0 (connect)", async () => {
    const client = fx.open("connect");
    const first = await client.responses.nextMatching(isKeepalive, 5_000);
    expect(first.seq).toBe(0n);
    const body = responseValue(first, "keepalive");
    expect(body.tokensUsed).toBe(0);
    expect(body.tokensMax).toBe(200_000);
  });
});

describe("detach (long grace)", () => {
  let fx: SessionFixture;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_DETACH_GRACE_MS: "60000" } });
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  it.each<ClientKind>(["grpc-js", "connect"])("a transport break detaches the session; its running turn goes on and is stored (%s)", async (kind) => {
    const { client, started } = await fx.start(kind);
    const id = started.sessionId;
    fx.fake.plan({ text: "I keep talking while you are away.", frameDelayMs: 30 });
    client.send(rq.user("talk", { messageId: "while-away" }));
    await nextOf(client, "textDelta");
    client.cancel();
    await expect.poll(async () => (await fx.rest("GET", `/v1/sessions/${id}`)).json.status, { timeout: 10_000 }).toBe("detached");
    expect(fx.server.app.registry.all().find((session) => session.id === id)?.status).toBe("detached");
    // The turn was not cancelled: the provider stream ran to its end and the turn is stored.
    const streamed = await fx.request(0);
    await streamed.closed;
    expect(streamed.aborted).toBe(false);
    await expect
      .poll(async () => (await fx.rest("GET", `/v1/sessions/${id}/messages?format=turns`)).json.turns, { timeout: 10_000 })
      .toEqual([
        expect.objectContaining({
          message_id: "while-away",
          stop_reason: "end_turn",
          assistant: expect.objectContaining({ text: "I keep talking while you are away." }),
        }),
      ]);
    // Ended for good through REST (otherwise after the grace).
    expect((await fx.rest("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expect(fx.server.app.registry.size).toBe(0);
    expect((await fx.rest("GET", `/v1/sessions/${id}`)).json.status).toBe("cancelled");
  });
});

describe("authentication required", () => {
  let fx: SessionFixture;
  let secret: string;
  beforeAll(async () => {
    fx = await startSessionFixture({ env: { ROZ_AUTH: "required" } });
    const tenant = await fx.server.app.store.ensureTenant("acme");
    secret = (await issueKey(fx.server.app.store, { tenantId: tenant.id, name: "session tests", scopes: ["sessions"] })).secret;
  });
  afterEach(() => fx.reset());
  afterAll(() => fx?.close());

  describe.each<ClientKind>(["grpc-js", "connect"])("%s", (kind) => {
    it.each<{ name: string; headers: Record<string, string> }>([
      { name: "no credentials", headers: {} },
      { name: "a wrong key", headers: { authorization: "Bearer roz_sk_not_a_real_key" } },
    ])("$name → SessionError{unauthenticated} then UNAUTHENTICATED", async ({ headers }) => {
      const client = fx.open(kind, headers);
      client.send(rq.start());
      const first = await client.next();
      expect(responseValue(first, "error")).toMatchObject({ code: "unauthenticated", retryable: false });
      expect((await client.status).code).toBe(GRPC.UNAUTHENTICATED);
      expect(fx.server.app.registry.size).toBe(0);
    });

    it("a valid key starts a session of its tenant", async () => {
      const client = fx.open(kind, { authorization: `Bearer ${secret}` });
      const started = await startSession(client);
      expect(started.sessionId).toMatch(UUID);
      expect(fx.server.app.registry.all().map((s) => s.principal.tenantId)).toEqual([expect.not.stringMatching(/^default$/)]);
    });
  });
});
