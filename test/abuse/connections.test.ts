// Connections are bounded: silent sockets, half prefaces, a preface without SETTINGS or
// without a stream and half-sent HTTP/1.1 headers are closed after their timeouts (they used
// to be held forever), also when the client keeps its side open, one address can hold only
// so many connections, and a connection that opens or resets streams faster than the cap for
// any one second is sent GOAWAY(ENHANCE_YOUR_CALM) and closed (its streams in flight
// cancelled a few per turn first). New streams are dispatched a few per event-loop turn, one
// connection at a time.
import * as http2 from "node:http2";
import * as net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../support/server.ts";
import { STALL_BOUND_MS, startBystander } from "../support/bystander.ts";
import { openAndCancel } from "../support/attacks.ts";
import { grpcFrame, grpcHeaders } from "../server/raw-h2.ts";
import { sessionRequestBytes } from "../support/session-client.ts";
import { rq } from "../support/session-protocol.ts";

const PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// Regression sizes: each is well past the guard it meets (`npm run bench -- abuse` replays the full-size attacks).
const SOCKETS_PER_KIND = 50;
/** Far past the 50-per-second caps; the guard stops the client after about 50. */
const RAPID_RESET_STREAMS = 2000;
/** Past the 300 routed and the 60th stream the guards allow, in reads of about a thousand. */
const BURST_STREAMS = 1000;

/** Connects, writes `bytes`, and resolves with how long the server took to close the socket (ms). */
function closedAfter(port: number, bytes: string, limitMs = 15_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(port, "127.0.0.1", () => {
      if (bytes !== "") socket.write(bytes);
    });
    socket.on("data", () => {});
    socket.on("error", () => {});
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the socket open for ${limitMs} ms`));
    }, limitMs);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(performance.now() - started);
    });
  });
}

describe("connection timeouts", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ ROZ_HANDSHAKE_TIMEOUT_MS: "500", ROZ_HEADERS_TIMEOUT_MS: "500" });
  });
  afterAll(() => server?.close());

  const attacks: [string, string][] = [
    ["a silent socket", ""],
    ["half an HTTP/2 preface", PREFACE.slice(0, 10)],
    ["a full preface without SETTINGS", PREFACE],
    ["half-sent HTTP/1.1 headers", "GET /healthz HTTP/1.1\r\nHost: roz\r\nX-Slow: "],
  ];
  for (const [what, bytes] of attacks) {
    it(`${what} is closed after its timeout`, async () => {
      const ms = await closedAfter(server.port, bytes);
      expect(ms).toBeGreaterThanOrEqual(400);
    });
  }

  it(`a bystander keeps streaming while ${SOCKETS_PER_KIND} sockets of each kind wait to be closed`, async () => {
    const bystander = await startBystander(server.url);
    const all = attacks.flatMap(([, bytes]) => Array.from({ length: SOCKETS_PER_KIND }, () => closedAfter(server.port, bytes)));
    await Promise.all(all);
    const report = await bystander.stop();
    expect(report.p99Ms, JSON.stringify(report)).toBeLessThan(STALL_BOUND_MS);
  });
});

describe("clients that stop midway and keep their side of the connection open", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ ROZ_HANDSHAKE_TIMEOUT_MS: "500", ROZ_HEADERS_TIMEOUT_MS: "500" });
  });
  afterAll(() => server?.close());

  /** Connections the server holds (sniffing, HTTP/1.1 or HTTP/2). */
  const held = () => new Promise<number>((resolve) => (server.app.fastify.server as unknown as net.Server).getConnections((_err, n) => resolve(n)));
  /** An empty SETTINGS frame (length 0, type 4, no flags, stream 0). */
  const SETTINGS = "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
  const stops: [string, string][] = [
    ["half an HTTP/1.1 request (its headers without the final CRLF)", "GET /healthz HTTP/1.1\r\nHost: roz\r\n"],
    ["the HTTP/2 preface, then nothing", PREFACE],
    ["the HTTP/2 preface and SETTINGS, then no stream", PREFACE + SETTINGS],
  ];
  for (const [what, bytes] of stops) {
    it(`${what}: the server lets go of the connection after the header timeout`, async () => {
      const sockets = Array.from({ length: 5 }, () => {
        const socket = net.connect({ port: server.port, host: "127.0.0.1", allowHalfOpen: true }, () => socket.write(bytes));
        socket.on("data", () => {});
        socket.on("error", () => {});
        return socket;
      });
      try {
        await expect.poll(held, { timeout: 400, interval: 20 }).toBe(5);
        await expect.poll(held, { timeout: 5000, interval: 100 }).toBe(0);
      } finally {
        for (const socket of sockets) socket.destroy();
      }
    });
  }
});

describe("the opening cap counts any one second, not a window restarted every second", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ ROZ_HTTP2_MAX_STREAMS_PER_SECOND: "10", ROZ_HTTP2_MAX_RESETS_PER_SECOND: "0" });
  });
  afterAll(() => server?.close());

  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** A new connection, and the code of the GOAWAY it got (undefined while none came). */
  const connect = async () => {
    const session = http2.connect(server.url);
    session.on("error", () => {});
    const ended: { goaway?: number } = {};
    session.on("goaway", (code: number) => (ended.goaway = code));
    await new Promise((resolve) => session.once("connect", resolve));
    return { session, ended };
  };
  /** Opens `n` requests for /healthz at once; resolves with their statuses (0: no answer) once all have ended. */
  const open = (session: http2.ClientHttp2Session, n: number): Promise<number[]> =>
    Promise.all(
      Array.from({ length: n }, () => {
        if (session.closed || session.destroyed) return 0;
        const stream = session.request({ ":path": "/healthz" });
        let status = 0;
        stream.on("response", (headers) => (status = Number(headers[":status"])));
        stream.on("error", () => {});
        stream.resume();
        return new Promise<number>((resolve) => stream.on("close", () => resolve(status)));
      }),
    );

  it("10 streams late in the connection's first second and 10 early in its next are 20 within a second: GOAWAY(ENHANCE_YOUR_CALM)", async () => {
    const { session, ended } = await connect();
    try {
      await pause(850);
      void open(session, 10);
      await pause(250);
      void open(session, 10);
      await expect.poll(() => ended.goaway, { timeout: 3000 }).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    } finally {
      session.destroy();
    }
  });

  it("10 streams, then 10 more over a second later, stay within the cap", async () => {
    const { session, ended } = await connect();
    try {
      expect(await open(session, 10)).toEqual(Array(10).fill(200));
      await pause(1300);
      expect(await open(session, 10)).toEqual(Array(10).fill(200));
      expect(ended.goaway).toBeUndefined();
    } finally {
      session.destroy();
    }
  });
});

describe("connections per address", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ ROZ_MAX_CONNECTIONS_PER_ADDRESS: "20", ROZ_HANDSHAKE_TIMEOUT_MS: "60000" });
  });
  afterAll(() => server?.close());

  it("beyond the cap a connection is closed at once; below it again, new clients are served", async () => {
    const held = await Promise.all(
      Array.from(
        { length: 20 },
        () =>
          new Promise<net.Socket>((resolve) => {
            const socket = net.connect(server.port, "127.0.0.1", () => resolve(socket));
            socket.on("error", () => {});
          }),
      ),
    );
    // The 21st is closed long before the (one minute) handshake timeout.
    expect(await closedAfter(server.port, "", 10_000)).toBeLessThan(10_000);
    expect(held.every((s) => !s.destroyed)).toBe(true);
    const closed = held.map((s) => new Promise((resolve) => s.once("close", resolve)));
    for (const s of held) s.destroy();
    await Promise.all(closed);
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
  });
});

for (const [cap, env] of [
  ["streams opened", { ROZ_HTTP2_MAX_STREAMS_PER_SECOND: "50", ROZ_HTTP2_MAX_RESETS_PER_SECOND: "0" }],
  ["streams reset", { ROZ_HTTP2_MAX_STREAMS_PER_SECOND: "0", ROZ_HTTP2_MAX_RESETS_PER_SECOND: "50" }],
] as const) {
  describe(`rapid reset, capped by ${cap} per second`, () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer(env);
    });
    afterAll(() => server?.close());
    it("a connection opening and resetting streams beyond the per-second cap gets GOAWAY(ENHANCE_YOUR_CALM); a bystander keeps streaming", async () => {
      const bystander = await startBystander(server.url);
      const session = http2.connect(server.url);
      session.on("error", () => {});
      const goaway = new Promise<number>((resolve) => session.on("goaway", (code: number) => resolve(code)));
      const closed = new Promise((resolve) => session.on("close", resolve));
      await new Promise((resolve) => session.once("connect", resolve));
      const opened = await openAndCancel(session, RAPID_RESET_STREAMS, 50);
      expect(await goaway).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      await closed;
      expect(opened).toBeLessThan(RAPID_RESET_STREAMS);
      const report = await bystander.stop();
      expect(report.p99Ms, JSON.stringify(report)).toBeLessThan(STALL_BOUND_MS);
    });
  });
}

describe("a connection over the opening cap with many streams in flight", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ ROZ_HTTP2_MAX_STREAMS_PER_SECOND: "150", ROZ_HTTP2_MAX_RESETS_PER_SECOND: "50", ROZ_START_TIMEOUT_MS: "60000" });
  });
  afterAll(() => server?.close());

  it("has its streams cancelled a few per turn before GOAWAY(ENHANCE_YOUR_CALM) closes it; a bystander keeps streaming", async () => {
    const bystander = await startBystander(server.url);
    const session = http2.connect(server.url);
    session.on("error", () => {});
    let goawayCode: number | undefined;
    const goaway = new Promise<void>((resolve) =>
      session.on("goaway", (code: number) => {
        goawayCode = code;
        resolve();
      }),
    );
    const closed = new Promise((resolve) => session.on("close", resolve));
    await new Promise((resolve) => session.once("connect", resolve));
    const ping = grpcFrame(sessionRequestBytes(rq.ping()));
    /** Opens a stream that sends a ping and no start; resolves once it was answered (dispatched, and held). */
    const open = () => {
      const stream = session.request(grpcHeaders("/roz.v1.AgentService/StreamSession"));
      stream.on("error", () => {});
      const outcome = { beforeGoaway: false, rstCode: -1 };
      stream.on("close", () => {
        outcome.beforeGoaway = goawayCode === undefined;
        outcome.rstCode = stream.rstCode ?? -1;
      });
      stream.write(ping);
      return { outcome, answered: new Promise((resolve) => stream.once("data", resolve)), closed: new Promise((resolve) => stream.on("close", resolve)) };
    };
    const held = Array.from({ length: 100 }, open);
    await Promise.all(held.map((stream) => stream.answered));
    // 100 more within the second: over the cap of 150.
    for (let i = 0; i < 100 && !session.closed && !session.destroyed; i++) open();
    await goaway;
    await closed;
    await Promise.all(held.map((stream) => stream.closed));
    expect(goawayCode).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    const cancelledFirst = held.filter(({ outcome }) => outcome.beforeGoaway && outcome.rstCode === http2.constants.NGHTTP2_CANCEL).length;
    // Closed at once, the connection's GOAWAY would come before any of them ended.
    expect(cancelledFirst).toBeGreaterThanOrEqual(90);
    const report = await bystander.stop();
    expect(report.p99Ms, JSON.stringify(report)).toBeLessThan(STALL_BOUND_MS);
  });
});

/** StreamSession calls the server at `url` routed (every answered request is counted by route). */
async function routedOn(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^roz_http_requests_total\{[^}]*route="\/roz\.v1\.AgentService\/StreamSession"[^}]*\} (\d+)$/gm)) n += Number(m[1]);
  return n;
}

describe("a flood of streams in one write", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ ROZ_HTTP2_MAX_STREAMS_PER_SECOND: "1000", ROZ_HTTP2_MAX_RESETS_PER_SECOND: "50" });
  });
  afterAll(() => server?.close());

  const routed = (): Promise<number> => routedOn(server.url);

  it("is not dispatched beyond what the guards let through: streams behind a burst wait a turn and are dropped once reset", async () => {
    const before = await routed();
    const session = http2.connect(server.url);
    session.on("error", () => {});
    const closed = new Promise((resolve) => session.on("close", resolve));
    await new Promise((resolve) => session.once("connect", resolve));
    // Streams opened and reset without yielding: they reach the server in a few large reads.
    await openAndCancel(session, BURST_STREAMS, 0);
    await closed;
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await routed()).toBeLessThan(before + 300);
  });

  it("a stream the client resets just after opening it, in its next write, is dropped unanswered", async () => {
    const uncapped = await startServer({ ROZ_HTTP2_MAX_STREAMS_PER_SECOND: "0", ROZ_HTTP2_MAX_RESETS_PER_SECOND: "0" });
    try {
      const before = await routedOn(uncapped.url);
      const session = http2.connect(uncapped.url);
      session.on("error", () => {});
      await new Promise((resolve) => session.once("connect", resolve));
      // Ten at a time: each write holds ten HEADERS, the next their RST_STREAMs.
      const opened = await openAndCancel(session, 500, 10);
      expect(opened).toBe(500);
      await new Promise((resolve) => setTimeout(resolve, 500));
      session.destroy();
      // Dispatched as they arrived, most would be routed (386 of the 500 were, before).
      expect(await routedOn(uncapped.url)).toBeLessThan(before + 25);
    } finally {
      await uncapped.close();
    }
  });

  it("is cut as it is read: the connection is closed at the stream over the reset cap, not after the whole read", async () => {
    const session = http2.connect(server.url);
    session.on("error", () => {});
    const goaway = new Promise<{ code: number; lastStreamId: number }>((resolve) =>
      session.on("goaway", (code: number, lastStreamId: number) => resolve({ code, lastStreamId })),
    );
    await new Promise((resolve) => session.once("connect", resolve));
    // Opened-and-reset streams in one go: a read of the server's holds about a thousand, far over the cap.
    await openAndCancel(session, BURST_STREAMS, 0);
    const { code, lastStreamId } = await goaway;
    expect(code).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    // Client stream ids are odd: stream n has id 2n - 1. The cap is 50 resets per second.
    expect((lastStreamId + 1) / 2).toBeLessThanOrEqual(60);
  });
});

describe("new streams are dispatched a few per turn, taken from each connection in turn", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({
      ROZ_MAX_STREAMS_PER_KEY: "0",
      ROZ_MAX_CONCURRENT_STREAMS: "5000",
      ROZ_HTTP2_MAX_STREAMS_PER_SECOND: "0",
      ROZ_START_TIMEOUT_MS: "0",
    });
  });
  afterAll(() => server?.close());

  it("a stream of another connection is served long before a 2,000-stream burst of one connection is", async () => {
    const ping = grpcFrame(sessionRequestBytes(rq.ping()));
    const connect = async () => {
      const session = http2.connect(server.url);
      session.on("error", () => {});
      await new Promise((resolve) => session.once("connect", resolve));
      return session;
    };
    const open = (session: http2.ClientHttp2Session, answered: () => void) => {
      const stream = session.request(grpcHeaders("/roz.v1.AgentService/StreamSession"));
      stream.on("error", () => {});
      stream.once("data", answered);
      stream.write(ping);
      return stream;
    };
    const [flooding, other] = await Promise.all([connect(), connect()]);
    let floodAnswered = 0;
    let floodAnsweredBeforeOther = -1;
    const flood = Array.from({ length: 2000 }, () => open(flooding, () => floodAnswered++));
    await new Promise<void>((resolve) =>
      open(other, () => {
        floodAnsweredBeforeOther = floodAnswered;
        resolve();
      }),
    );
    // A queue in arrival order would have served the whole burst first.
    expect(floodAnsweredBeforeOther).toBeLessThan(1000);
    await expect.poll(() => floodAnswered, { timeout: 30_000 }).toBe(2000);
    for (const stream of flood) stream.close(http2.constants.NGHTTP2_CANCEL);
    flooding.destroy();
    other.destroy();
  }, 60_000);
});
