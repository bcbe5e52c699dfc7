// The rpc and session layers in process, over Connect's router transport: no socket, no
// HTTP/2, no store (sessions persist in memory), the offline scripted model. Fast checks
// of what the socket tests check end to end: response order, a tool round trip, in-band errors.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport, type Client } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { createAgent, defaultAgentLimits } from "../../src/agent/index.ts";
import { RozError } from "../../src/errors/index.ts";
import { MemoryPersistence } from "../support/memory-persistence.ts";
import { AgentService, type SessionRequest, SessionRequestSchema, type SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { createModelCatalog } from "../../src/models/index.ts";
import { createAgentService, encodeResponse, type RpcAuthenticator } from "../../src/rpc/index.ts";
import { type SessionDeps, SessionDirectory, SessionRegistry, type SessionStream } from "../../src/session/index.ts";

const silent = { info() {}, warn() {}, error() {} };

/** An AgentService over the router transport, as `src/app` wires it minus sockets and store. */
function inProcess(authenticate: RpcAuthenticator = async () => ({ tenantId: "acme", scopes: ["admin"] })) {
  const persistence = new MemoryPersistence();
  const registry = new SessionRegistry();
  const session: SessionDeps = {
    models: createModelCatalog({ env: {} }),
    createAgent,
    persistence,
    limits: defaultAgentLimits,
    defaultPermissions: [],
    defaultMaxContextTokens: 200_000,
    keepaliveIntervalMs: 3_600_000,
    detachGraceMs: 1000,
    maxWaitingInputs: 16,
    log: silent,
    metrics: { sessionStatus() {}, turnCompleted() {}, error() {} },
    allowSessionStart: () => true,
    encodeEvent: encodeResponse,
    memoryEvents: 1000,
  };
  const directory = new SessionDirectory(session, registry);
  const openStreams = new Set<SessionStream>();
  // These tests run sessions only: WatchTeam has no tasks to find.
  const noTeams = { watch: async (): Promise<never> => Promise.reject(new RozError("not_found")) };
  const transport = createRouterTransport(({ service }) => {
    service(
      AgentService,
      createAgentService({ session, registry, directory, authenticate, openStreams, defaultEventFormat: "flat", teams: noTeams, openWatches: new Set() }),
    );
  });
  return { client: createClient(AgentService, transport), persistence, registry };
}

/** A bidi call whose requests the test sends one by one, and whose responses it reads in order. */
class Call {
  readonly #queue: SessionRequest[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  readonly #responses: AsyncIterator<SessionResponse>;
  readonly seen: SessionResponse[] = [];

  constructor(client: Client<typeof AgentService>, signal: AbortSignal) {
    const self = this;
    async function* requests(): AsyncGenerator<SessionRequest> {
      for (;;) {
        const next = self.#queue.shift();
        if (next !== undefined) yield next;
        else if (self.#ended) return;
        else await new Promise<void>((resolve) => (self.#wake = resolve));
      }
    }
    this.#responses = client.streamSession(requests(), { signal })[Symbol.asyncIterator]();
  }

  send(request: Parameters<typeof create<typeof SessionRequestSchema>>[1]): void {
    this.#queue.push(create(SessionRequestSchema, request));
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  /** The next response (fails the test when the stream ends first). */
  async next(): Promise<SessionResponse> {
    const { value, done } = await this.#responses.next();
    if (done) throw new Error(`stream ended; seen: ${this.seen.map((r) => r.response.case).join(",")}`);
    this.seen.push(value);
    return value;
  }

  /** Responses up to and including the first of `kind`. */
  async until(kind: SessionResponse["response"]["case"]): Promise<SessionResponse[]> {
    const out: SessionResponse[] = [];
    for (;;) {
      const r = await this.next();
      out.push(r);
      if (r.response.case === kind) return out;
    }
  }

  /** Drains the stream; resolves with its error (undefined when it ended OK). */
  async finish(): Promise<unknown> {
    try {
      for (;;) {
        const { done, value } = await this.#responses.next();
        if (done) return undefined;
        this.seen.push(value);
      }
    } catch (err) {
      return err;
    }
  }
}

const aborts: AbortController[] = [];
afterEach(() => {
  for (const controller of aborts.splice(0)) controller.abort();
});
const open = (client: Client<typeof AgentService>): Call => {
  const controller = new AbortController();
  aborts.push(controller);
  return new Call(client, controller.signal);
};
const start = { request: { case: "start" as const, value: {} } };
const userMessage = (content: string) => ({ request: { case: "userMessage" as const, value: { content } } });
const cases = (responses: SessionResponse[]) => responses.map((r) => r.response.case);

describe("AgentService in process (router transport)", () => {
  it("start, then one turn: session_started first, turn_complete last, seq gap-free; the turn is persisted", async () => {
    const { client, persistence } = inProcess();
    const call = open(client);
    call.send(start);
    const started = await call.next();
    expect(started.response.case).toBe("sessionStarted");
    const sessionId = started.response.case === "sessionStarted" ? started.response.value.sessionId : "";
    expect(started.response.value).toMatchObject({ model: "scripted/default" });

    call.send(userMessage("hello roz"));
    const turn = await call.until("turnComplete");
    expect(cases(turn)).toContain("textDelta");
    expect(cases(turn).indexOf("textDelta")).toBeLessThan(cases(turn).indexOf("turnComplete"));
    const text = turn.flatMap((r) => (r.response.case === "textDelta" ? [r.response.value.content] : [])).join("");
    expect(text).toBe("You said: hello roz");
    const last = turn.at(-1)!;
    expect(last.response.case === "turnComplete" && last.response.value.stopReason).toBe("end_turn");
    expect(call.seen.map((r) => Number(r.seq))).toEqual(call.seen.map((_, i) => i + 1));

    call.end();
    expect(await call.finish()).toBeUndefined();
    expect(persistence.sessions.get(sessionId)?.turns.map((t) => t.userContent)).toEqual(["hello roz"]);
  });

  it("a tool round trip: tool_request, the client's result, the model's answer", async () => {
    const { client, persistence } = inProcess();
    const call = open(client);
    call.send({
      request: {
        case: "start",
        value: { tools: [{ name: "read_file", description: "Read a file", parametersSchema: { type: "object", properties: { path: { type: "string" } } } }] },
      },
    });
    const started = await call.next();
    const sessionId = started.response.case === "sessionStarted" ? started.response.value.sessionId : "";
    const script = { responses: [[{ tool_call: { id: "call_1", name: "read_file", arguments: { path: "a.txt" } } }], [{ text: "It says hi." }]] };
    call.send(userMessage(`script: ${JSON.stringify(script)}`));

    const request = (await call.until("toolRequest")).at(-1)!;
    expect(request.response.value).toMatchObject({ toolCallId: "call_1", toolName: "read_file", parameters: { path: "a.txt" } });
    call.send({ request: { case: "toolResult", value: { toolCallId: "call_1", success: true, result: "hi" } } });
    const rest = await call.until("turnComplete");
    expect(rest.flatMap((r) => (r.response.case === "textDelta" ? [r.response.value.content] : [])).join("")).toBe("It says hi.");
    expect(cases(rest)).not.toContain("toolRequest");

    call.end();
    await call.finish();
    const [record] = persistence.sessions.get(sessionId)?.turns ?? [];
    expect(record?.toolCalls).toMatchObject([{ id: "call_1", name: "read_file", permission: "allowed", outcome: { success: true, result: "hi" } }]);
  });

  it("in-band errors: non-fatal ones leave the stream usable, a refused start ends it", async () => {
    const { client } = inProcess();
    const call = open(client);
    call.send(start);
    await call.next();
    call.send({ request: { case: "toolResult", value: { toolCallId: "nope", success: true, result: "x" } } });
    const error = await call.next();
    expect(error.response.case).toBe("error");
    expect(error.response.value).toMatchObject({ code: "no_active_turn", retryable: false });
    // The session goes on.
    call.send({ request: { case: "ping", value: {} } });
    expect((await call.next()).response.case).toBe("pong");
    call.end();
    expect(await call.finish()).toBeUndefined();

    // Before start: answered in-band, and a start still works on the same stream.
    const early = open(client);
    early.send(userMessage("hello?"));
    expect((await early.next()).response.value).toMatchObject({ code: "no_session", retryable: false });
    early.send(start);
    expect((await early.next()).response.case).toBe("sessionStarted");

    // A refused start is fatal: the in-band error, then the stream's status.
    const refused = open(client);
    refused.send({ request: { case: "start", value: { model: "nowhere/none" } } });
    expect((await refused.next()).response.value).toMatchObject({ code: "model_unavailable", retryable: false });
    const ended = await refused.finish();
    expect(ended).toBeInstanceOf(ConnectError);
    expect((ended as ConnectError).code).toBe(Code.FailedPrecondition);
  });

  it("a key the authenticator refuses: in-band unauthenticated, then UNAUTHENTICATED, and no session", async () => {
    const { client, registry } = inProcess(async () => {
      throw new RozError("unauthenticated", "missing credentials");
    });
    const call = open(client);
    call.send(start);
    const error = await call.next();
    expect(error.response.value).toMatchObject({ code: "unauthenticated" });
    const ended = await call.finish();
    expect((ended as ConnectError).code).toBe(Code.Unauthenticated);
    expect(registry.all()).toEqual([]);
  });
});
