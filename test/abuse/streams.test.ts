// Session streams are bounded: one that never sends start ends after ROZ_START_TIMEOUT_MS,
// one key holds at most ROZ_MAX_STREAMS_PER_KEY at once, an oversized message's stream is
// reset after its trailers, and revoking or expiring a key ends its open streams at their
// next request.
import * as http2 from "node:http2";
import * as net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueKey } from "../../src/auth/index.ts";
import { readFile } from "node:fs/promises";
import { runCli, type SpawnedServer, spawnServer, type TestServer } from "../support/server.ts";
import { sessionClientFactory, type SessionClientFactory } from "../support/session-client.ts";
import { nextOf, readTurn, rq, startSession } from "../support/session-protocol.ts";
import { client, grpcTransport, makeKey, startAuthServer } from "../rest/support.ts";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { AgentService } from "../../src/gen/roz/v1/agent_pb.js";
import { grpcFrame } from "../server/raw-h2.ts";
import { STALL_BOUND_MS, startBystander } from "../support/bystander.ts";

const GRPC = { INVALID_ARGUMENT: 3, RESOURCE_EXHAUSTED: 8, UNAUTHENTICATED: 16 } as const;
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
interface Answer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: string;
}

describe("stream limits", () => {
  let server: TestServer;
  let factory: SessionClientFactory;
  let admin: string;
  beforeAll(async () => {
    server = await startAuthServer({
      ROZ_START_TIMEOUT_MS: "500",
      ROZ_MAX_STREAMS_PER_KEY: "5",
      ROZ_MAX_MESSAGE_BYTES: "64KiB",
      ROZ_CREDENTIAL_RECHECK_MS: "0",
    });
    admin = (await makeKey(server, "acme")).secret;
    factory = sessionClientFactory("grpc-js", server.url);
  });
  afterAll(async () => {
    factory?.close();
    await server?.close();
  });

  it("a stream that sends no start ends with invalid_argument after the start timeout", async () => {
    const started = performance.now();
    const stream = factory.open(bearer(admin));
    stream.send(rq.ping());
    await nextOf(stream, "pong");
    expect(await nextOf(stream, "error", 10_000)).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("no start") });
    expect((await stream.status).code).toBe(GRPC.INVALID_ARGUMENT);
    expect(performance.now() - started).toBeGreaterThanOrEqual(400);
  });

  it("one key holds at most 5 streams: the 6th gets resource_exhausted; other keys are not affected; a closed one frees its slot", async () => {
    const key = (await makeKey(server, "greedy", ["sessions"])).secret;
    const held = Array.from({ length: 5 }, () => factory.open(bearer(key)));
    for (const s of held) await startSession(s);
    const sixth = factory.open(bearer(key));
    expect(await nextOf(sixth, "error")).toMatchObject({ code: "resource_exhausted" });
    expect((await sixth.status).code).toBe(GRPC.RESOURCE_EXHAUSTED);
    const other = factory.open(bearer(admin));
    await startSession(other);
    held[0]!.end();
    await held[0]!.status;
    const again = factory.open(bearer(key));
    await startSession(again);
    for (const s of [...held.slice(1), other, again]) s.end();
    await Promise.all([...held, other, again].map((s) => s.status));
  });

  /**
   * Sends a 1 MiB message (the limit is 64 KiB) on a stream it never half-closes; resolves with
   * the answer once the server closed the stream (rejects when it stays open: the body would sit
   * in flow control).
   */
  const oversized = async (path: string, contentType: string, enveloped: boolean) => {
    const session = http2.connect(server.url);
    session.on("error", () => {});
    try {
      const stream = session.request({ ":method": "POST", ":path": path, "content-type": contentType, te: "trailers", ...bearer(admin) });
      let headers: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on("response", (h) => (headers = h));
      stream.on("trailers", (t) => (trailers = t));
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", () => {});
      const closed = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("the stream was not reset within 10 s: the body sits in flow control")), 10_000);
        stream.on("close", () => {
          clearTimeout(timer);
          resolve();
        });
      });
      const message = Buffer.alloc(1024 * 1024, 1);
      stream.write(enveloped ? grpcFrame(message) : message);
      await closed;
      return { headers, trailers, body: Buffer.concat(chunks).toString("latin1"), rstCode: stream.rstCode };
    } finally {
      session.close();
    }
  };

  it("an oversized message gets RESOURCE_EXHAUSTED trailers, then the stream is reset so the client stops sending", async () => {
    const answer = await oversized("/roz.v1.AgentService/StreamSession", "application/grpc", true);
    expect(Number(answer.trailers["grpc-status"])).toBe(GRPC.RESOURCE_EXHAUSTED);
    expect(answer.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
  });

  // Every call whose answer is complete while the client still sends is reset after it: unary
  // and server-streaming calls too, in each protocol.
  for (const [path, contentType, enveloped, answered] of [
    [
      "SendToSession",
      "application/grpc",
      true,
      (a: Answer) => expect(Number(a.trailers["grpc-status"] ?? a.headers["grpc-status"])).toBe(GRPC.RESOURCE_EXHAUSTED),
    ],
    ["SendToSession", "application/grpc-web+proto", true, (a: Answer) => expect(a.body).toMatch(/grpc-status: ?8/)],
    ["SendToSession", "application/proto", false, (a: Answer) => expect(a.body).toContain('"code":"resource_exhausted"')],
    ["SendToSession", "application/json", false, (a: Answer) => expect(a.body).toContain('"code":"resource_exhausted"')],
    ["AttachSession", "application/connect+proto", true, (a: Answer) => expect(a.body).toContain('"code":"resource_exhausted"')],
  ] as const) {
    it(`${path} (${contentType}): an oversized request is answered, then the stream is reset`, async () => {
      const answer = await oversized(`/roz.v1.AgentService/${path}`, contentType, enveloped);
      answered(answer);
      expect(answer.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    });
  }
  it("HTTP/1.1: an oversized chunked Connect unary call is refused, and the connection is not left stuck", async () => {
    const { port } = new URL(server.url);
    const socket = net.connect(Number(port), "127.0.0.1");
    socket.on("error", () => {});
    let received = "";
    socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    const chunk = "x".repeat(64 * 1024);
    const body = `${Array.from({ length: 16 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join("")}0\r\n\r\n`;
    socket.write(
      `POST /roz.v1.AgentService/SendToSession HTTP/1.1\r\nHost: roz\r\nContent-Type: application/proto\r\nAuthorization: Bearer ${admin}\r\nTransfer-Encoding: chunked\r\n\r\n${body}` +
        "GET /healthz HTTP/1.1\r\nHost: roz\r\n\r\n",
    );
    // Either the connection goes on (the next request is answered) or it is closed: never held.
    const settled = await Promise.race([
      closed.then(() => "closed"),
      (async () => {
        while ((received.match(/HTTP\/1\.1 /g) ?? []).length < 2) await new Promise((r) => setTimeout(r, 20));
        return "answered";
      })(),
      new Promise((r) => setTimeout(() => r("stuck"), 10_000)),
    ]);
    socket.destroy();
    expect(received).toMatch(/^HTTP\/1\.1 4\d\d/);
    expect(settled).not.toBe("stuck");
  });
});

describe("revocation reaches open sessions", () => {
  let server: TestServer;
  let factory: SessionClientFactory;
  let admin: string;
  beforeAll(async () => {
    server = await startAuthServer({ ROZ_CREDENTIAL_RECHECK_MS: "0" });
    admin = (await makeKey(server, "acme")).secret;
    factory = sessionClientFactory("grpc-js", server.url);
  });
  afterAll(async () => {
    factory?.close();
    await server?.close();
  });

  const revokedBy = {
    REST: async (_tenant: string, id: string) => expect((await client(server, admin).delete(`/v1/auth/keys/${id}`)).status).toBe(204),
    "the CLI in another process": async (tenant: string, id: string) => {
      const run = await runCli(["keys", "revoke", "--tenant", tenant, id], { ROZ_DATA_DIR: server.app.config.dataDir });
      expect(run.code, run.stderr).toBe(0);
    },
  };
  for (const [how, revoke] of Object.entries(revokedBy)) {
    it(`a key revoked through ${how}: the session's next request gets unauthenticated and the stream ends`, async () => {
      const key = await makeKey(server, "acme", ["sessions"], `victim-${how}`);
      const session = factory.open(bearer(key.secret));
      await startSession(session);
      session.send(rq.user("hello"));
      await readTurn(session);
      await revoke("acme", key.id);
      session.send(rq.user("spend more tokens"));
      expect(await nextOf(session, "error")).toMatchObject({ code: "unauthenticated" });
      expect((await session.status).code).toBe(GRPC.UNAUTHENTICATED);
    });
  }

  it("with the default re-check interval, a key revoked or rotated through this server reaches the very next request", async () => {
    const paced = await startAuthServer({ ROZ_CREDENTIAL_RECHECK_MS: "60000" });
    const pacedAdmin = (await makeKey(paced, "acme")).secret;
    const pacedFactory = sessionClientFactory("grpc-js", paced.url);
    try {
      const withdraw = {
        revoked: async (id: string) => expect((await client(paced, pacedAdmin).delete(`/v1/auth/keys/${id}`)).status).toBe(204),
        rotated: async (id: string) => expect((await client(paced, pacedAdmin).post(`/v1/auth/keys/${id}/rotate`)).status).toBe(201),
      };
      for (const [how, run] of Object.entries(withdraw)) {
        const key = await makeKey(paced, "acme", ["sessions"], `paced-${how}`);
        const session = pacedFactory.open(bearer(key.secret));
        await startSession(session);
        session.send(rq.ping());
        await nextOf(session, "pong");
        // Within the interval, so only the revocation itself can make the stream check again.
        await run(key.id);
        session.send(rq.user("spend more tokens"));
        expect(await nextOf(session, "error"), how).toMatchObject({ code: "unauthenticated" });
        expect((await session.status).code, how).toBe(GRPC.UNAUTHENTICATED);
      }
      // An AttachSession stream sends no requests: the revocation itself ends it.
      const watcher = await makeKey(paced, "acme", ["sessions"], "paced-attached");
      const seen: string[] = [];
      const attached = (async () => {
        try {
          const calls = createClient(AgentService, grpcTransport(paced.url, watcher.secret));
          for await (const r of calls.attachSession({ target: { case: "start", value: {} } })) seen.push(r.response.case ?? "");
          return "ended without an error";
        } catch (err) {
          return ConnectError.from(err).code;
        }
      })();
      await expect.poll(() => seen.includes("sessionStarted")).toBe(true);
      await client(paced, pacedAdmin).delete(`/v1/auth/keys/${watcher.id}`);
      expect(await attached).toBe(Code.Unauthenticated);
      expect(seen.at(-1)).toBe("error");
    } finally {
      pacedFactory.close();
      await paced.close();
    }
  });

  it("an expired key: the session's next request after the expiry gets unauthenticated", async () => {
    const tenant = await server.app.store.ensureTenant("acme");
    const expiresAt = Date.now() + 1500;
    const { secret } = await issueKey(server.app.store, { tenantId: tenant.id, name: "short", scopes: ["sessions"], expiresAt });
    const session = factory.open(bearer(secret));
    await startSession(session);
    session.send(rq.ping());
    await nextOf(session, "pong");
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now() + 50)));
    session.send(rq.user("after the expiry"));
    expect(await nextOf(session, "error")).toMatchObject({ code: "unauthenticated" });
    expect((await session.status).code).toBe(GRPC.UNAUTHENTICATED);
  });
});

/** Regression size: rounds of warm-up, then as many measured (the bench replays 20,000 attempts). */
const ROUNDS = 5;
const ROUND_STREAMS = 200;

describe("streams that never start, against a server process", () => {
  let server: SpawnedServer;
  beforeAll(async () => {
    server = await spawnServer({ ROZ_START_TIMEOUT_MS: "500", ROZ_MAX_STREAMS_PER_KEY: "5" });
  });
  afterAll(() => server?.dispose());

  const rss = async (): Promise<number> => {
    const status = await readFile(`/proc/${server.child.pid}/status`, "utf8");
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
  };

  it(`${(2 * ROUNDS * ROUND_STREAMS).toLocaleString("en")} attempts: memory stays flat after warming up; a bystander of the same tenant keeps streaming`, async () => {
    const bystander = await startBystander(server.url);
    const flood = sessionClientFactory("grpc-js", server.url);
    const round = async () => {
      const streams = Array.from({ length: ROUND_STREAMS }, () => flood.open());
      for (const s of streams) s.send(rq.ping());
      const codes = await Promise.all(streams.map((s) => s.status.then((st) => st.code)));
      // A few get a slot (the bystander holds one of 5) and wait for the start timeout; the rest are refused at once.
      expect(codes.filter((c) => c === GRPC.RESOURCE_EXHAUSTED).length).toBeGreaterThanOrEqual(150);
      expect(codes.every((c) => c === GRPC.RESOURCE_EXHAUSTED || c === GRPC.INVALID_ARGUMENT)).toBe(true);
    };
    try {
      // The heap grows to its working size over the first rounds; after that memory must stay flat
      // (unbounded streams grew by gigabytes). The bench reports the 20,000-attempt figure.
      for (let i = 0; i < ROUNDS; i++) await round();
      const before = await rss();
      for (let i = 0; i < ROUNDS; i++) await round();
      expect((await rss()) - before).toBeLessThan(100 * 1024 * 1024);
    } finally {
      flood.close();
    }
    const report = await bystander.stop();
    expect(report.p99Ms, JSON.stringify(report)).toBeLessThan(STALL_BOUND_MS);
  }, 90_000);
});
