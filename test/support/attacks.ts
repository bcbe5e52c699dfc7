/**
 * The attacks of the resilience report, each one function against a running server (auth
 * disabled or `headers` with a key): the abuse tests run them next to a bystander session,
 * and `npm run bench -- abuse` times them. Each resolves once the server has dealt with
 * the attack (answered, refused or closed it).
 */
import * as http2 from "node:http2";
import * as net from "node:net";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService, SessionRequestSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { grpcFrame } from "../server/raw-h2.ts";
import { sessionClientFactory } from "./session-client.ts";
import { nextOf, readTurn, rq, startSession, tool } from "./session-protocol.ts";

export type Attack = (url: string, headers?: Record<string, string>) => Promise<void>;

const HTTP2_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

async function rest(url: string, method: string, path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; json: any }> {
  const res = await fetch(url + path, {
    method,
    headers: { ...headers, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** A user message whose fenced script makes the scripted model call `name` once, then answer. */
export const callToolScript = (name: string, extra = ""): string =>
  `\`\`\`script\n${JSON.stringify({ responses: [[{ tool_call: { name, arguments: {} } }], [{ text: "done" }]] })}\n\`\`\`\n${extra}`;

/** Permission globs: the extglob is refused; the worst valid pattern decides a 64-character tool. */
export const globAttack: Attack = async (url, headers = {}) => {
  const refused = await rest(
    url,
    "POST",
    "/v1/environments",
    { name: `extglob-${Date.now()}`, permissions: [{ tool_pattern: "+(a*)+(a*)b", policy: "deny" }] },
    headers,
  );
  if (refused.status !== 400) throw new Error(`the extglob was not refused: ${refused.status}`);
  const env = await rest(
    url,
    "POST",
    "/v1/environments",
    { name: `worst-${Date.now()}-${Math.random()}`, permissions: [{ tool_pattern: `${"*a".repeat(30)}*b`, policy: "deny" }] },
    headers,
  );
  if (env.status !== 201) throw new Error(`environment: ${env.status}`);
  const factory = sessionClientFactory("grpc-js", url);
  try {
    const session = factory.open(headers);
    const name = "a".repeat(64);
    await startSession(session, { environmentId: env.json.id, tools: [tool(name)] });
    session.send(rq.user(callToolScript(name)));
    const request = await nextOf(session, "toolRequest", 60_000);
    session.send(rq.toolResult(request.toolCallId, "ok"));
    await readTurn(session, 60_000);
    session.end();
    await session.status;
  } finally {
    factory.close();
  }
};

/** A `size`-character whitespace-free word in a user message and in a tool result, then one more turn. */
export const longWordAttack =
  (size: number): Attack =>
  async (url, headers = {}) => {
    const word = "x".repeat(size);
    const factory = sessionClientFactory("grpc-js", url);
    try {
      const session = factory.open(headers);
      await startSession(session, { tools: [tool("read")] });
      session.send(rq.user(callToolScript("read", word)));
      const request = await nextOf(session, "toolRequest", 120_000);
      session.send(rq.toolResult(request.toolCallId, word));
      await readTurn(session, 120_000);
      session.send(rq.user("again"));
      await readTurn(session, 120_000);
      session.end();
      await session.status;
    } finally {
      factory.close();
    }
  };

/**
 * `rounds` register_tools of `count` tools each (refused beyond the caps): described test
 * tools, or with `minimal` tools of a name only (350,000 of them fill a 4 MiB message).
 */
export const registerToolsAttack =
  (rounds = 3, count = 40_000, minimal = false): Attack =>
  async (url, headers = {}) => {
    const factory = sessionClientFactory("grpc-js", url);
    try {
      const session = factory.open(headers);
      await startSession(session);
      for (let r = 0; r < rounds; r++) {
        session.send(rq.register(Array.from({ length: count }, (_, i) => (minimal ? { name: `t${i}` } : tool(`t${r}_${i}`)))));
        await nextOf(session, "error", 60_000);
      }
      session.end();
      await session.status;
    } finally {
      factory.close();
    }
  };

/** How a SendToSession attack sends its message: binary gRPC, gRPC with gzip, or Connect JSON. */
export type SendToSessionWire = "grpc" | "grpc-gzip" | "connect-json";

/**
 * One SendToSession of a register_tools with `count` minimal tools (350,000 fill 4 MiB in
 * binary, 200,000 most of it in JSON) to a session of this key; refused in-band.
 */
export const sendToSessionToolsAttack =
  (wire: SendToSessionWire = "grpc", count = 350_000): Attack =>
  async (url, headers = {}) => {
    const factory = sessionClientFactory("grpc-js", url);
    try {
      const session = factory.open(headers);
      const { sessionId } = await startSession(session);
      const limits = { readMaxBytes: 8 * 1024 * 1024, writeMaxBytes: 8 * 1024 * 1024 };
      const transport =
        wire === "connect-json"
          ? createConnectTransport({ baseUrl: url, httpVersion: "2", useBinaryFormat: false, ...limits })
          : createGrpcTransport({ baseUrl: url, ...limits, ...(wire === "grpc-gzip" ? { sendCompression: compressionGzip } : {}) });
      const register = rq.register(Array.from({ length: count }, (_, i) => ({ name: `t${i}` })));
      await createClient(AgentService, transport).sendToSession({ sessionId, request: create(SessionRequestSchema, register) }, { headers });
      await nextOf(session, "error", 60_000);
      session.end();
      await session.status;
    } finally {
      factory.close();
    }
  };

/** Opens `count` sockets of each kind (silent, half preface, preface without SETTINGS, half headers) and waits until the server closed them all. */
export const slowSocketsAttack =
  (count: number): Attack =>
  async (url) => {
    const { port } = new URL(url);
    const kinds = ["", HTTP2_PREFACE.slice(0, 10), HTTP2_PREFACE, "GET /healthz HTTP/1.1\r\nHost: roz\r\nX-Slow: "];
    const one = (bytes: string) =>
      new Promise<void>((resolve) => {
        const socket = net.connect(Number(port), "127.0.0.1", () => {
          if (bytes !== "") socket.write(bytes);
        });
        socket.on("error", () => {});
        socket.on("data", () => {});
        socket.on("close", () => resolve());
      });
    await Promise.all(kinds.flatMap((bytes) => Array.from({ length: count }, () => one(bytes))));
  };

/** `count` streams that never send start, 200 open at a time; each ends (start timeout or per-key cap). */
export const noStartAttack =
  (count: number): Attack =>
  async (url, headers = {}) => {
    const factory = sessionClientFactory("grpc-js", url);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next++ < count) {
        const stream = factory.open(headers);
        stream.send(rq.ping());
        await stream.status;
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(200, count) }, worker));
    } finally {
      factory.close();
    }
  };

/** `count` oversized (1 MiB) messages on streams the client never half-closes; each must be reset by the server. */
export const oversizedAttack =
  (count: number): Attack =>
  async (url, headers = {}) => {
    const session = http2.connect(url);
    session.on("error", () => {});
    try {
      const payload = grpcFrame(Buffer.alloc(1024 * 1024, 1));
      for (let i = 0; i < count; i++) {
        const stream = session.request({
          ":method": "POST",
          ":path": "/roz.v1.AgentService/StreamSession",
          "content-type": "application/grpc",
          te: "trailers",
          ...headers,
        });
        stream.on("error", () => {});
        stream.on("data", () => {});
        const closed = new Promise((resolve) => stream.on("close", resolve));
        stream.write(payload);
        await closed;
      }
    } finally {
      session.close();
    }
  };

/**
 * Opens StreamSession streams on `session` and cancels each at once, until `count` were
 * opened or the server closed the session, yielding to the event loop every `yieldEvery`
 * streams (0: never, so that they leave in a few large writes). Resolves with how many it opened.
 */
export async function openAndCancel(
  session: http2.ClientHttp2Session,
  count: number,
  yieldEvery: number,
  headers: Record<string, string> = {},
): Promise<number> {
  let opened = 0;
  while (!session.closed && !session.destroyed && opened < count) {
    const stream = session.request({ ":method": "POST", ":path": "/roz.v1.AgentService/StreamSession", "content-type": "application/grpc", ...headers });
    stream.on("error", () => {});
    stream.close(http2.constants.NGHTTP2_CANCEL);
    opened++;
    if (yieldEvery > 0 && opened % yieldEvery === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  return opened;
}

/**
 * HTTP/2 rapid reset: opens and cancels streams on fresh connections until `total` streams
 * were opened (the server closes each connection that goes over its per-second cap).
 */
export const rapidResetAttack =
  (total: number): Attack =>
  async (url, headers = {}) => {
    let opened = 0;
    while (opened < total) {
      const session = http2.connect(url);
      session.on("error", () => {});
      await new Promise<void>((resolve) => {
        session.once("connect", () => resolve());
        session.once("close", () => resolve());
      });
      opened += await openAndCancel(session, total - opened, 100, headers);
      session.destroy();
    }
  };

/** `count` REST bodies nested 100,000 levels deep (each a 400). */
export const deepJsonAttack =
  (count: number): Attack =>
  async (url, headers = {}) => {
    const body = `{"name":"deep","tool_defaults":${'{"a":'.repeat(100_000)}{}${"}".repeat(100_000)}}`;
    for (let i = 0; i < count; i++) {
      const reply = await rest(url, "POST", "/v1/environments", body, headers);
      if (reply.status !== 400) throw new Error(`deep JSON got ${reply.status}`);
    }
  };

/** `count` Connect JSON SendToSession calls whose 4 MB body nests two million arrays: each must be a 400. */
export const deepRpcJsonAttack =
  (count: number): Attack =>
  async (url, headers = {}) => {
    const body = `${"[".repeat(2_000_000)}${"]".repeat(2_000_000)}`;
    for (let i = 0; i < count; i++) {
      const reply = await rest(url, "POST", "/roz.v1.AgentService/SendToSession", body, headers);
      if (reply.status !== 400) throw new Error(`deep RPC JSON got ${reply.status}`);
    }
  };
