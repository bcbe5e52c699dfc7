/**
 * The world of the session end-to-end tests: a fake OpenAI-compatible server, the real
 * roz app (in process, h2c on port 0) whose provider `openai` points at it, and client
 * factories for both client libraries. One per test file; `reset()` after each test ends
 * every call the test opened, waits until no session is left, and drains replies the
 * test planned but did not use, so that tests stay independent.
 */
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest } from "../support/fake-openai/index.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { type ClientKind, type SessionClient, type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { type StartInit, startSession, type ValueOf } from "../support/session-protocol.ts";
import { asChatBody, type TestProvider, testProvider } from "./provider-body.ts";

/** gRPC status codes the tests expect (Connect's `Code` has the same numbers). */
export const GRPC = { OK: 0, CANCELLED: 1, INVALID_ARGUMENT: 3, NOT_FOUND: 5, FAILED_PRECONDITION: 9, UNAUTHENTICATED: 16 } as const;

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The model id the fake serves; sessions resolve `<provider>/fake-model` by default. */
export const FAKE_MODEL = "fake-model";

export interface SessionFixture {
  readonly fake: FakeOpenAI;
  /** The provider the sessions' default model is on (`ROZ_TEST_PROVIDER`, default `openai`). */
  readonly provider: TestProvider;
  readonly server: TestServer;
  /** Opens a StreamSession call with `kind` (tracked: `reset()` ends it); `headers` as metadata. */
  open(kind: ClientKind, headers?: Record<string, string>): SessionClient;
  /** Opens a call and starts a session on it. */
  start(kind: ClientKind, start?: StartInit): Promise<{ client: SessionClient; started: ValueOf<"sessionStarted"> }>;
  /** Requests the fake received since the test began, in order; bodies as Chat Completions bodies (provider-body.ts). */
  requests(): RecordedRequest[];
  /** A REST call to the server (JSON in and out; auth is off unless the env turned it on). */
  rest(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; json: any }>;
  /** The `index`-th request (0-based) of this test, once it has arrived. */
  request(index: number, timeoutMs?: number): Promise<RecordedRequest>;
  /** After each test. */
  reset(): Promise<void>;
  /** After all tests. */
  close(): Promise<void>;
}

export interface FixtureOptions {
  /** The default model's provider; default `ROZ_TEST_PROVIDER`, else `openai`. */
  provider?: TestProvider;
  /** Server settings on top of the fixture's defaults (see `startSessionFixture`). */
  env?: Record<string, string>;
  /** Settings computed from the fake (e.g. a providers file naming its URL). */
  envFor?: (fake: FakeOpenAI) => Record<string, string> | Promise<Record<string, string>>;
}

/**
 * Starts the fake and a server whose default model is `openai/fake-model` over Chat
 * Completions — or `anthropic/fake-model` over the Messages API when `ROZ_TEST_PROVIDER`
 * is `anthropic` (the vitest project `anthropic` runs the session suites so) — keepalives effectively off (every response is one the test caused), and a
 * short detach grace so that broken calls release their sessions quickly.
 */
export async function startSessionFixture(options: FixtureOptions = {}): Promise<SessionFixture> {
  const fake = await startFakeOpenAI();
  const provider = options.provider ?? testProvider();
  let server: TestServer;
  try {
    server = await startServer({
      OPENAI_API_KEY: "sk-test",
      OPENAI_BASE_URL: fake.baseURL,
      ROZ_OPENAI_API: "chat",
      ...(provider === "anthropic" ? { ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: fake.url } : {}),
      ROZ_DEFAULT_MODEL: `${provider}/${FAKE_MODEL}`,
      ROZ_KEEPALIVE_INTERVAL_MS: "3600000",
      ROZ_DETACH_GRACE_MS: "300",
      ...options.env,
      ...(options.envFor ? await options.envFor(fake) : {}),
    });
  } catch (err) {
    await fake.close();
    throw err;
  }
  const factories = new Map<ClientKind, SessionClientFactory>();
  const factory = (kind: ClientKind): SessionClientFactory => {
    let f = factories.get(kind);
    if (!f) factories.set(kind, (f = sessionClientFactory(kind, server.url)));
    return f;
  };
  let clients: SessionClient[] = [];
  let mark = 0;
  // The record's other fields stay live (`aborted` is set when the client goes): inherited, not copied.
  const chatView = (r: RecordedRequest): RecordedRequest =>
    r.path === "/v1/messages" ? (Object.create(r, { body: { value: asChatBody(r.path, r.body), enumerable: true } }) as RecordedRequest) : r;

  const open = (kind: ClientKind, headers?: Record<string, string>): SessionClient => {
    const client = factory(kind).open(headers);
    clients.push(client);
    return client;
  };

  return {
    fake,
    provider,
    server,
    open,
    async start(kind, start = {}) {
      const client = open(kind);
      const started = await startSession(client, start);
      return { client, started };
    },
    requests: () => fake.requests.slice(mark).map(chatView),
    async rest(method, path, body, headers = {}) {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await response.text();
      return { status: response.status, json: text === "" ? undefined : JSON.parse(text) };
    },
    request: (index, timeoutMs = 10_000) => fake.waitForRequest(mark + index, timeoutMs).then(chatView),
    async reset() {
      const open = clients;
      clients = [];
      // cancel_session ends a session at once (a broken call would only detach it).
      for (const client of open) {
        if (client.ended) continue;
        client.send({ request: { case: "cancelSession", value: { reason: "test over" } } });
        client.end();
      }
      let timer: NodeJS.Timeout | undefined;
      const giveUp = new Promise((resolve) => (timer = setTimeout(resolve, 5_000)));
      await Promise.race([Promise.all(open.map((c) => c.status)), giveUp]);
      clearTimeout(timer);
      for (const client of open) if (!client.ended) client.cancel();
      try {
        await until(
          () => server.app.registry.size === 0,
          () => `${server.app.registry.size} sessions still live after the test`,
        );
      } catch (err) {
        // Fail this test, but leave a clean server for the next ones.
        for (const session of server.app.registry.all()) await fetch(`${server.url}/v1/sessions/${session.id}`, { method: "DELETE" });
        throw err;
      }
      await drainFake(fake);
      await Promise.all(fake.requests.map((r) => r.closed));
      mark = fake.requests.length;
    },
    async close() {
      for (const f of factories.values()) f.close();
      await server.close();
      await fake.close();
    },
  };
}

/** Consumes replies a test planned but never used, by asking for them and hanging up. */
async function drainFake(fake: FakeOpenAI): Promise<void> {
  while (fake.pending() > 0) {
    const before = fake.pending();
    const abort = new AbortController();
    const body = JSON.stringify({ model: FAKE_MODEL, stream: true, messages: [{ role: "user", content: "drain" }] });
    const done = fetch(`${fake.baseURL}/chat/completions`, { method: "POST", body, signal: abort.signal }).then(
      (r) => r.body?.cancel(),
      () => undefined,
    );
    await until(
      () => fake.pending() < before,
      () => "the fake did not take a drain request",
    );
    abort.abort();
    await done.catch(() => undefined);
  }
}

/** Polls `done` (usable in hooks, unlike expect.poll); throws with `problem()` after `timeoutMs`. */
async function until(done: () => boolean, problem: () => string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(problem());
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
