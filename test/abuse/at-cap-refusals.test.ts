// A key at its stream cap: once one of its streams was refused through the full path, its next
// gRPC streams are refused before routing, with the same answer, for as long as the key stays
// at its cap, is not revoked, and the credential check is trusted (ROZ_CREDENTIAL_RECHECK_MS).
import { fromBinary, toJson } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionResponseSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { AtCapRefusals } from "../../src/rpc/index.ts";
import { StreamSlots } from "../../src/session/index.ts";
import { type H2Response, grpcFrame, grpcHeaders, grpcStatusOf, h2Request, parseGrpcFrames } from "../server/raw-h2.ts";
import type { TestServer } from "../support/server.ts";
import { type SessionClient, sessionClientFactory, type SessionClientFactory, sessionRequestBytes } from "../support/session-client.ts";
import { nextOf, rq, startSession } from "../support/session-protocol.ts";
import { client, makeKey, startAuthServer } from "../rest/support.ts";

const GRPC = { RESOURCE_EXHAUSTED: 8, UNAUTHENTICATED: 16 } as const;
const STREAM_SESSION = "/roz.v1.AgentService/StreamSession";
const CAP = 2;
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
const ping = grpcFrame(sessionRequestBytes(rq.ping()));

/** The in-band messages of an answer as JSON, with what differs per event (ids, times) blanked. */
function messagesOf(answer: H2Response): unknown[] {
  const blank = (value: unknown): unknown => {
    if (typeof value === "string") return /^[0-9a-f-]{36}$/.test(value) || /^\d{4}-\d\d-\d\dT/.test(value) ? "<varies>" : value;
    if (Array.isArray(value)) return value.map(blank);
    if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, blank(v)]));
    return value;
  };
  return parseGrpcFrames(answer.data).map((bytes) => blank(toJson(SessionResponseSchema, fromBinary(SessionResponseSchema, bytes))));
}

/** What a client can compare between two answers: all but the date and the request id. */
function comparable(answer: H2Response) {
  const { date: _date, "x-request-id": requestId, ...headers } = answer.headers;
  expect(requestId).toMatch(/^[\w.:-]+$/);
  return { headers, trailers: answer.trailers, messages: messagesOf(answer) };
}

describe("streams of a key at its stream cap", () => {
  let server: TestServer;
  let factory: SessionClientFactory;
  let admin: string;
  beforeAll(async () => {
    server = await startAuthServer({ ROZ_MAX_STREAMS_PER_KEY: String(CAP), ROZ_CREDENTIAL_RECHECK_MS: "60000" });
    admin = (await makeKey(server, "acme")).secret;
    factory = sessionClientFactory("grpc-js", server.url);
  });
  afterAll(async () => {
    factory?.close();
    await server?.close();
  });

  const refusedEarly = async (): Promise<number> => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    return Number(/^roz_streams_refused_early_total (\d+)$/m.exec(text)?.[1]);
  };
  /** A new key whose CAP streams are open (started sessions). */
  const keyAtCap = async (name: string): Promise<{ secret: string; id: string; held: SessionClient[] }> => {
    const key = await makeKey(server, "acme", ["sessions"], name);
    const held = Array.from({ length: CAP }, () => factory.open(bearer(key.secret)));
    for (const stream of held) await startSession(stream);
    return { secret: key.secret, id: key.id, held };
  };
  const release = async (held: SessionClient[]): Promise<void> => {
    for (const stream of held) stream.end();
    await Promise.all(held.map((stream) => stream.status));
  };
  /** Runs `body` with a new key at its cap, then closes the key's streams. */
  const withKeyAtCap = async (name: string, body: (key: Awaited<ReturnType<typeof keyAtCap>>) => Promise<void>): Promise<void> => {
    const key = await keyAtCap(name);
    try {
      await body(key);
    } finally {
      await release(key.held);
    }
  };
  const call = (path: string, headers: Record<string, string>): Promise<H2Response> => h2Request(server.url, { ...grpcHeaders(path), ...headers }, ping);
  /** A StreamSession call of `secret` refused for its cap (the first one through the full path, which remembers the credential). */
  const refused = async (secret: string): Promise<void> => {
    expect(grpcStatusOf(await call(STREAM_SESSION, bearer(secret)))).toBe(GRPC.RESOURCE_EXHAUSTED);
  };

  const variants: [string, string, Record<string, string>][] = [
    ["StreamSession", STREAM_SESSION, {}],
    ["StreamSession, grpc-js's accept-encoding", STREAM_SESSION, { "grpc-accept-encoding": "identity,deflate,gzip" }],
    ["StreamSession, envelope format", STREAM_SESSION, { "roz-event-format": "envelope" }],
    ["StreamSession, both formats, brotli", STREAM_SESSION, { "roz-event-format": "Both", "grpc-accept-encoding": "br" }],
    ["AttachSession", "/roz.v1.AgentService/AttachSession", { "x-request-id": "client-chosen.1" }],
  ];
  for (const [name, path, headers] of variants) {
    it(`${name}: the second refusal is answered before routing, the same as the first`, () =>
      withKeyAtCap(`cap-${name}`, async (key) => {
        const counted = await refusedEarly();
        const first = await call(path, { ...bearer(key.secret), ...headers });
        expect(await refusedEarly()).toBe(counted);
        const second = await call(path, { ...bearer(key.secret), ...headers });
        expect(await refusedEarly()).toBe(counted + 1);
        expect(grpcStatusOf(first)).toBe(GRPC.RESOURCE_EXHAUSTED);
        expect(comparable(second)).toEqual(comparable(first));
        expect(messagesOf(second).length).toBeGreaterThan(0);
        if (headers["x-request-id"]) expect(second.headers["x-request-id"]).toBe(headers["x-request-id"]);
      }));
  }

  it("grpc-js sees the in-band resource_exhausted and then RESOURCE_EXHAUSTED on every refused stream", () =>
    withKeyAtCap("cap-grpc-js", async (key) => {
      const counted = await refusedEarly();
      for (let i = 0; i < 5; i++) {
        const stream = factory.open(bearer(key.secret));
        stream.send(rq.ping());
        expect(await nextOf(stream, "error")).toMatchObject({
          code: "resource_exhausted",
          message: `this key already has ${CAP} open streams; at most ${CAP} are allowed`,
        });
        expect((await stream.status).code).toBe(GRPC.RESOURCE_EXHAUSTED);
      }
      expect(await refusedEarly()).toBe(counted + 4);
    }));

  it("a slot that frees is taken by the very next stream", () =>
    withKeyAtCap("cap-freed", async (key) => {
      await refused(key.secret);
      await refused(key.secret);
      await release(key.held.splice(0, 1));
      const next = factory.open(bearer(key.secret));
      key.held.push(next);
      await startSession(next);
    }));

  it("a key revoked through this server gets unauthenticated at once, not resource_exhausted", () =>
    withKeyAtCap("cap-revoked", async (key) => {
      await refused(key.secret);
      await refused(key.secret);
      expect((await client(server, admin).delete(`/v1/auth/keys/${key.id}`)).status).toBe(204);
      const counted = await refusedEarly();
      const after = await call(STREAM_SESSION, bearer(key.secret));
      expect(grpcStatusOf(after)).toBe(GRPC.UNAUTHENTICATED);
      expect(messagesOf(after)).toMatchObject([{ error: { code: "unauthenticated" } }]);
      expect(await refusedEarly()).toBe(counted);
    }));

  const routedVariants: [string, Record<string, string>][] = [
    ["the Connect protocol", { "content-type": "application/connect+proto", "connect-protocol-version": "1" }],
    ["gRPC with JSON messages", { "content-type": "application/grpc+json" }],
    ["a deadline", { "grpc-timeout": "10S" }],
    ["a browser's origin", { origin: "https://console.example" }],
    ["a request compression the server lacks", { "grpc-encoding": "snappy" }],
    ["an unknown event format", { "roz-event-format": "xml" }],
  ];
  it("calls the shortcut does not cover take the full path, with its answer", () =>
    withKeyAtCap("cap-routed", async (key) => {
      await refused(key.secret);
      const counted = await refusedEarly();
      for (const [, headers] of routedVariants) {
        const answer = await call(STREAM_SESSION, { ...bearer(key.secret), ...headers });
        expect(answer.headers[":status"]).toBe(200);
      }
      expect(await refusedEarly()).toBe(counted);
      // The credential is still remembered: a plain call after them is answered early.
      await refused(key.secret);
      expect(await refusedEarly()).toBe(counted + 1);
    }));
});

describe("AtCapRefusals trust", () => {
  const principal = { tenantId: "t1", keyId: "k1", scopes: ["sessions"] };
  const headers = { ":method": "POST", ":path": "/roz.v1.AgentService/StreamSession", "content-type": "application/grpc", authorization: "Bearer a" };
  const setup = () => {
    let now = 1_000;
    let revocations = 0;
    const slots = new StreamSlots(1);
    const release = slots.acquire(principal);
    const refusals = new AtCapRefusals({
      slots,
      trustMs: 500,
      revocationsOf: () => revocations,
      defaultEventFormat: "flat",
      acceptCompression: [],
      now: () => now,
    });
    refusals.remember("Bearer a", principal);
    return { refusals, release, advance: (ms: number) => (now += ms), revoke: () => revocations++ };
  };

  it("ends after trustMs: the next stream takes the full path", () => {
    const { refusals, advance } = setup();
    expect(refusals.answer(headers)?.trailers["grpc-status"]).toBe("8");
    advance(499);
    expect(refusals.answer(headers)).toBeDefined();
    advance(1);
    expect(refusals.answer(headers)).toBeUndefined();
    advance(-1); // forgotten, not only expired
    expect(refusals.answer(headers)).toBeUndefined();
  });

  it("ends with a revocation of the key, or a free slot; another credential was never trusted", () => {
    const revoked = setup();
    revoked.revoke();
    expect(revoked.refusals.answer(headers)).toBeUndefined();
    const freed = setup();
    freed.release();
    expect(freed.refusals.answer(headers)).toBeUndefined();
    expect(setup().refusals.answer({ ...headers, authorization: "Bearer b" })).toBeUndefined();
  });

  it("is off with trustMs 0", () => {
    const slots = new StreamSlots(1);
    slots.acquire(principal);
    const refusals = new AtCapRefusals({ slots, trustMs: 0, revocationsOf: () => 0, defaultEventFormat: "flat", acceptCompression: [] });
    refusals.remember("Bearer a", principal);
    expect(refusals.answer(headers)).toBeUndefined();
  });
});
