/**
 * Sessions survive restarts (session-behaviour.md §6): the real CLI as a child process, a
 * bidi client (grpc-js StreamSession) and a Connect-Web client (`@connectrpc/connect-web`
 * over Node's fetch: AttachSession + SendToSession) each hold a conversation; the server is
 * stopped with SIGTERM or killed with SIGKILL and a new process starts on the same data; each
 * client re-attaches from the last seq it saw, and its next message continues the
 * conversation: the model (the fake OpenAI server) gets the earlier turns as history.
 * Also: a second process on the same data leaves the first one's live sessions alone.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService, type SessionResponse, SessionRequestSchema } from "../../../src/gen/roz/v1/agent_pb.js";
import { request } from "../../rest/support.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fake-openai/index.ts";
import type { SpawnedServer } from "../../support/server.ts";
import type { SessionClient } from "../../support/session-client.ts";
import { caseOf, readTurn, rq, startSession, tool, turnCompleteOf, responseValue, valuesOf } from "../../support/session-protocol.ts";
import { InputDelivery, InputState } from "../../../src/gen/roz/v1/agent_pb.js";
import type { DurabilityBackend } from "./backend.ts";
import { SuiteProcesses } from "./suite-processes.ts";

const MODEL = "openai/fake-model";

/** Chat Completions messages the fake recorded, without the system prompt. */
type ChatMessage = { role: string; content: unknown };
const conversationOf = (fake: FakeOpenAI, index: number) =>
  (fake.requests[index]!.body.messages as ChatMessage[]).filter((m) => m.role !== "system").map((m) => [m.role, m.content]);

/** Retries `attempt` while the server answers UNAVAILABLE (a killed owner's heartbeat has not expired yet). */
async function whileUnavailable<T>(attempt: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof ConnectError && err.code === Code.Unavailable) || Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** A browser-style client: a downlink (AttachSession) and an uplink (SendToSession), over fetch. */
function webClient(baseUrl: string) {
  const connect = (url: string) => createClient(AgentService, createConnectTransport({ baseUrl: url }));
  let client = connect(baseUrl);
  const seen: SessionResponse[] = [];
  let downlink: AbortController | undefined;
  let ended: Promise<{ code: Code | 0 }> = Promise.resolve({ code: 0 });
  const attach = (target: Parameters<typeof client.attachSession>[0]) => {
    downlink = new AbortController();
    const signal = downlink.signal;
    ended = (async () => {
      try {
        for await (const r of client.attachSession(target, { signal })) seen.push(r);
        return { code: 0 as const };
      } catch (err) {
        return { code: ConnectError.from(err).code };
      }
    })();
  };
  const lastSeq = () => Number(seen.filter((r) => caseOf(r) !== "keepalive").at(-1)?.seq ?? 0n);
  return {
    seen,
    lastSeq,
    start: () => attach({ target: { case: "start", value: { model: MODEL } } }),
    /** Re-attaches (to the server at `url`) from the last seq seen; resolves once the stream is attached. */
    async reattach(sessionId: string, url: string) {
      client = connect(url);
      await whileUnavailable(async () => {
        attach({ target: { case: "sessionId", value: sessionId }, afterSeq: BigInt(lastSeq()) });
        // A ping answered on the downlink proves it is attached.
        await client.sendToSession({ sessionId, request: create(SessionRequestSchema, rq.ping()) });
        const status = await Promise.race([ended, new Promise<undefined>((resolve) => setTimeout(resolve, 300))]);
        if (status && status.code !== 0) throw new ConnectError("re-attach failed", status.code);
      });
    },
    send: (sessionId: string, init: Parameters<typeof rq.user>[0]) => client.sendToSession({ sessionId, request: create(SessionRequestSchema, rq.user(init)) }),
    async turnComplete(after: number) {
      await expect.poll(() => seen.some((r) => caseOf(r) === "turnComplete" && Number(r.seq) > after), { timeout: 20_000 }).toBe(true);
      return seen.filter((r) => caseOf(r) === "turnComplete" && Number(r.seq) > after);
    },
    drop: () => downlink?.abort(),
    ended: () => ended,
  };
}

export function defineRestartSuite(name: string, makeBackend: () => Promise<DurabilityBackend>): void {
  describe(`sessions survive restarts: ${name}`, () => {
    let backend: DurabilityBackend | undefined;
    let fake: FakeOpenAI;
    const processes = new SuiteProcesses();
    const spawn = (): Promise<SpawnedServer> =>
      processes.spawn({
        ...backend!.env,
        OPENAI_API_KEY: "sk-test",
        OPENAI_BASE_URL: fake.baseURL,
        ROZ_KEEPALIVE_INTERVAL_MS: "3600000",
        ROZ_NODE_HEARTBEAT_MS: "200",
        ROZ_NODE_EXPIRY_MS: "1000",
        ROZ_SHUTDOWN_GRACE_MS: "2000",
      });
    const open = (url: string): SessionClient => processes.open(url);
    /** Opens a StreamSession that resumes `sessionId` after `afterSeq`, retrying while the old owner may still be alive. */
    const resumeBidi = async (url: string, sessionId: string, afterSeq: number): Promise<SessionClient> =>
      whileUnavailable(async () => {
        const client = open(url);
        client.send({ request: { case: "resume", value: { sessionId, afterSeq: BigInt(afterSeq) } } });
        client.send(rq.ping());
        const first = await client.responses.nextMatching((r) => caseOf(r) === "pong" || caseOf(r) === "error", 10_000).catch(() => undefined);
        if (first && caseOf(first) === "pong") return client;
        const status = await client.status;
        throw new ConnectError(status.message, status.code);
      });

    beforeAll(async () => {
      fake = await startFakeOpenAI({ defaultReply: { text: "ok" } });
      backend = await makeBackend();
    });
    afterAll(async () => {
      await processes.dispose();
      await fake?.close();
      await backend?.dispose();
    });

    it("a second server process on the same data leaves the first one's live sessions alone", async () => {
      const first = await spawn();
      const a = open(first.url);
      const { sessionId } = await startSession(a, { model: MODEL });
      const second = await spawn();
      // The second process wrote its heartbeat and swept abandoned sessions before it listened:
      // the first's session, whose node heart-beats, stayed live.
      expect((await request(second.url, "GET", `/v1/sessions/${sessionId}`)).json.status).toBe("active");
      // It refuses to take the session over while its owner heart-beats.
      const stolen = open(second.url);
      stolen.send({ request: { case: "resume", value: { sessionId, afterSeq: 0n } } });
      expect((await stolen.status).code).toBe(Code.Unavailable);
      a.send(rq.user("still here?"));
      expect(turnCompleteOf(await readTurn(a)).stopReason).toBe("end_turn");
      a.end();
      expect((await a.status).code).toBe(0);
      expect((await second.stop("SIGTERM")).code).toBe(0);
      expect((await first.stop("SIGTERM")).code).toBe(0);
    }, 60_000);

    it("a turn cut by SIGKILL is recorded as interrupted when the session is adopted; the conversation goes on", async () => {
      let server = await spawn();
      const a = open(server.url);
      const { sessionId } = await startSession(a, { model: "scripted/default" });
      a.send(rq.user("hello", { messageId: "m1" }));
      expect(turnCompleteOf(await readTurn(a)).stopReason).toBe("end_turn");
      a.send(rq.user(`script: ${JSON.stringify({ responses: [[{ delay_ms: 60_000 }, { text: "never" }]] })}`, { messageId: "m2" }));
      await a.responses.nextMatching((r) => caseOf(r) === "activityUpdate");
      // The running turn is named in the stored state before the process dies.
      await expect
        .poll(async () => JSON.stringify((await backend!.inspect([`SELECT state FROM sessions WHERE id = '${sessionId}'`])).results), { timeout: 15_000 })
        .toContain("runningTurn");
      const seen = Number(a.responses.seen.at(-1)!.seq);
      server.child.kill("SIGKILL");
      await server.exited;

      server = await spawn();
      const b = await resumeBidi(server.url, sessionId, seen);
      const error = await b.responses.nextMatching((r) => caseOf(r) === "error", 15_000);
      expect(responseValue(error, "error")).toMatchObject({ code: "interrupted", retryable: true });
      expect(Number(error.seq)).toBeGreaterThan(seen);
      const done = responseValue(await b.responses.nextMatching((r) => caseOf(r) === "turnComplete", 15_000), "turnComplete");
      expect(done).toMatchObject({ messageId: "m2", stopReason: "error" });
      b.send(rq.user("again", { messageId: "m3" }));
      expect(turnCompleteOf(await readTurn(b)).stopReason).toBe("end_turn");
      const turns = (await request(server.url, "GET", `/v1/sessions/${sessionId}/messages?format=turns`)).json.turns;
      expect(turns.map((t: { message_id: string; stop_reason: string; error?: { code: string } }) => [t.message_id, t.stop_reason, t.error?.code])).toEqual([
        ["m1", "end_turn", undefined],
        ["m2", "error", "interrupted"],
        ["m3", "end_turn", undefined],
      ]);
      b.end();
      expect((await b.status).code).toBe(0);
      expect((await server.stop("SIGTERM")).code).toBe(0);
    }, 90_000);

    it("a steered message not yet seen and a queue of two survive a SIGKILL: after the re-attach each runs once, in order", async () => {
      let server = await spawn();
      const a = open(server.url);
      const { sessionId } = await startSession(a, { model: MODEL, tools: [tool("wait_here")] });
      const before = fake.requests.length;
      fake.plan(
        { toolCalls: [{ id: "call_wait", name: "wait_here", arguments: {} }] },
        { text: "steer answered" },
        { text: "q1 answered" },
        { text: "q2 answered" },
      );
      a.send(rq.user("start work", { messageId: "w1" }));
      await a.responses.nextMatching((r) => caseOf(r) === "toolRequest");
      // The steer waits for the tool result that never comes; two messages queue behind the turn.
      a.send(rq.user("steer text", { messageId: "s1", delivery: InputDelivery.STEER }));
      a.send(rq.user("queued one", { messageId: "q1", delivery: InputDelivery.QUEUE }));
      a.send(rq.user("queued two", { messageId: "q2", delivery: InputDelivery.QUEUE }));
      await a.responses.nextMatching((r) => caseOf(r) === "inputUpdate" && responseValue(r, "inputUpdate").messageId === "q2");
      await expect
        .poll(async () => JSON.stringify((await backend!.inspect([`SELECT state FROM sessions WHERE id = '${sessionId}'`])).results), { timeout: 15_000 })
        .toMatch(/steer text.*queued one.*queued two/);
      const seen = Number(a.responses.seen.at(-1)!.seq);
      server.child.kill("SIGKILL");
      await server.exited;

      server = await spawn();
      const b = await resumeBidi(server.url, sessionId, seen);
      const responses = [];
      for (let turns = 0; turns < 4; ) {
        const r = await b.next(20_000);
        responses.push(r);
        if (caseOf(r) === "turnComplete") turns++;
      }
      expect(valuesOf(responses, "turnComplete").map((t) => [t.messageId, t.stopReason])).toEqual([
        ["w1", "error"],
        ["s1", "end_turn"],
        ["q1", "end_turn"],
        ["q2", "end_turn"],
      ]);
      expect(
        valuesOf(responses, "inputUpdate")
          .filter((u) => u.state === InputState.STARTED)
          .map((u) => u.messageId),
      ).toEqual(["s1", "q1", "q2"]);
      // The model saw each message once, in order.
      const last = JSON.stringify(fake.requests.at(-1)!.body.messages);
      for (const text of ["steer text", "queued one", "queued two"]) expect(last.split(text)).toHaveLength(2);
      expect(fake.requests.length - before).toBe(4);
      const turns = (await request(server.url, "GET", `/v1/sessions/${sessionId}/messages?format=turns`)).json.turns;
      expect(turns.map((t: { message_id: string }) => t.message_id)).toEqual(["w1", "s1", "q1", "q2"]);
      expect((await request(server.url, "GET", `/v1/sessions/${sessionId}`)).json.queued_inputs).toEqual([]);
      b.end();
      expect((await b.status).code).toBe(0);
      expect((await server.stop("SIGTERM")).code).toBe(0);
    }, 90_000);

    it.each(["SIGTERM", "SIGKILL"] as const)(
      "a bidi client and a Connect-Web client keep their conversations across a %s restart",
      async (signal) => {
        let server = await spawn();
        const bidi = open(server.url);
        const bidiSession = (await startSession(bidi, { model: MODEL })).sessionId;
        fake.plan({ text: "Bidi one." });
        bidi.send(rq.user("bidi first"));
        expect(turnCompleteOf(await readTurn(bidi)).stopReason).toBe("end_turn");
        const bidiSeen = Number(bidi.responses.seen.at(-1)!.seq);

        const web = webClient(server.url);
        web.start();
        await expect.poll(() => web.seen.length).toBeGreaterThan(0);
        const webSession = responseValue(web.seen[0]!, "sessionStarted").sessionId;
        fake.plan({ text: "Web one." });
        await web.send(webSession, "web first");
        await web.turnComplete(0);

        if (signal === "SIGKILL") {
          server.child.kill("SIGKILL");
          await server.exited;
        } else {
          expect((await server.stop("SIGTERM")).code).toBe(0);
          expect((await bidi.status).code).toBe(Code.Unavailable);
          expect((await web.ended()).code).toBe(Code.Unavailable);
        }
        web.drop();

        server = await spawn();
        // The bidi client: resume from the last seq it saw, then the next turn sees the first.
        const bidi2 = await resumeBidi(server.url, bidiSession, bidiSeen);
        const before = fake.requests.length;
        fake.plan({ text: "Bidi two." });
        bidi2.send(rq.user("bidi second"));
        const turn = await readTurn(bidi2);
        expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
        expect(turn.every((r) => Number(r.seq) > bidiSeen)).toBe(true);
        const bidiRequest = fake.requests.findIndex((r, i) => i >= before && JSON.stringify(r.body).includes("bidi second"));
        expect(conversationOf(fake, bidiRequest)).toEqual([
          ["user", "bidi first"],
          ["assistant", "Bidi one."],
          ["user", "bidi second"],
        ]);

        // The Connect-Web client: a new downlink from its last seq, the next message over the uplink.
        const webSeen = web.lastSeq();
        await web.reattach(webSession, server.url);
        fake.plan({ text: "Web two." });
        await web.send(webSession, "web second");
        await web.turnComplete(webSeen);
        const webRequest = fake.requests.findIndex((r) => JSON.stringify(r.body).includes("web second"));
        expect(conversationOf(fake, webRequest)).toEqual([
          ["user", "web first"],
          ["assistant", "Web one."],
          ["user", "web second"],
        ]);
        const stored = await request(server.url, "GET", `/v1/sessions/${webSession}`);
        expect(stored.json).toMatchObject({ turn_count: 2, attached_streams: 1 });

        bidi2.end();
        expect((await bidi2.status).code).toBe(0);
        web.drop();
        expect((await server.stop("SIGTERM")).code).toBe(0);
      },
      90_000,
    );
  });
}
