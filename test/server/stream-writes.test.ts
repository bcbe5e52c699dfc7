// On HTTP/2, a binary session stream's responses after the first go straight onto the stream,
// past connect's per-message pipeline. What each protocol's client must still get: every
// response once and in order, framed for its protocol, then the end of stream; also when the
// client stops reading, the flow-control window fills and the server has to wait for it.
import * as http2 from "node:http2";
import { gunzipSync } from "node:zlib";
import { fromBinary } from "@bufbuild/protobuf";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type SessionResponse, SessionResponseSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { startSessionFixture, type SessionFixture } from "../session/fixture.ts";
import type { FakeReply } from "../support/fake-openai/reply.ts";
import { sessionRequestBytes } from "../support/session-client.ts";
import { rq, sequenceProblem, textOf } from "../support/session-protocol.ts";
import { grpcFrame } from "./raw-h2.ts";

let fx: SessionFixture;
beforeAll(async () => {
  fx = await startSessionFixture();
});
afterEach(() => fx.reset());
afterAll(() => fx?.close());

const TOKENS = 20_000;
const GZIP = 0x01;
const END = 0x80; // gRPC-Web trailers
const CONNECT_END = 0x02;

/** The protocols a browser or a native client speaks over HTTP/2, and how each asks for gzip responses. */
const protocols: [string, http2.OutgoingHttpHeaders, string][] = [
  ["gRPC", { "content-type": "application/grpc", te: "trailers" }, "grpc-accept-encoding"],
  ["gRPC-Web", { "content-type": "application/grpc-web+proto" }, "grpc-accept-encoding"],
  ["Connect", { "content-type": "application/connect+proto", "connect-protocol-version": "1" }, "connect-accept-encoding"],
];

interface Read {
  responses: SessionResponse[];
  /** Messages that arrived compressed, and those of 1 KiB or more that did not. */
  compressed: number;
  largePlain: number;
  /** The end of stream: gRPC trailers, or the body's last frame (gRPC-Web trailers, Connect end message). */
  end: string;
}

/** Splits a body into its frames; a compressed message is expanded. A frame not yet whole (still arriving) is left out. */
function readBody(data: Buffer, trailers: http2.IncomingHttpHeaders): Read {
  const responses: SessionResponse[] = [];
  let compressed = 0;
  let largePlain = 0;
  let end = trailers["grpc-status"] !== undefined ? `grpc-status: ${trailers["grpc-status"]}` : "";
  for (let at = 0; at + 5 <= data.length; ) {
    const flags = data[at]!;
    const length = data.readUInt32BE(at + 1);
    if (at + 5 + length > data.length) break;
    const payload = data.subarray(at + 5, at + 5 + length);
    at += 5 + length;
    if (flags & (END | CONNECT_END)) end = payload.toString("utf8").trim();
    else {
      if (flags & GZIP) compressed++;
      else if (length >= 1024) largePlain++;
      responses.push(fromBinary(SessionResponseSchema, flags & GZIP ? gunzipSync(payload) : payload));
    }
  }
  return { responses, compressed, largePlain, end };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts a session over raw HTTP/2 with a 1 KB receive window, sends a prompt, reads nothing
 * for 500 ms while the provider streams `reply`, then reads until turn_complete and half-closes.
 */
async function pausedTurn(headers: http2.OutgoingHttpHeaders, reply: FakeReply) {
  fx.fake.plan(reply);
  const session = http2.connect(fx.server.url, { settings: { initialWindowSize: 1024 } });
  session.on("error", () => {});
  try {
    const stream = session.request({ ":method": "POST", ":path": "/roz.v1.AgentService/StreamSession", ...headers });
    const chunks: Buffer[] = [];
    let trailers: http2.IncomingHttpHeaders = {};
    let status = 0;
    stream.on("response", (h) => (status = Number(h[":status"])));
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    const closed = new Promise<void>((resolve) => stream.on("close", resolve));
    stream.write(grpcFrame(sessionRequestBytes(rq.start())));
    stream.write(grpcFrame(sessionRequestBytes(rq.user("go"))));
    stream.pause();
    await fx.request(0);
    await sleep(500);
    stream.resume();
    for (let waited = 0; !readBody(Buffer.concat(chunks), {}).responses.some((r) => r.response.case === "turnComplete"); waited += 20) {
      if (waited > 20_000) throw new Error("no turn_complete within 20 s");
      await sleep(20);
    }
    stream.end();
    await closed;
    return { status, rstCode: stream.rstCode ?? 0, ...readBody(Buffer.concat(chunks), trailers) };
  } finally {
    session.close();
  }
}

describe.each(protocols)("a %s session stream on HTTP/2 whose client stops reading mid-turn", (_name, headers, acceptEncoding) => {
  it("gets every response once and in order, then the end of stream, once it reads again", async () => {
    // Paced: many small responses, most of them written while the server waits for the client.
    const read = await pausedTurn(headers, { tokens: TOKENS, rate: TOKENS });
    expect(read.status).toBe(200);
    expect(sequenceProblem(read.responses)).toBeUndefined();
    expect(textOf(read.responses)).toBe("tok ".repeat(TOKENS));
    expect(read.responses.at(-1)?.response.case).toBe("turnComplete");
    expect(read.compressed).toBe(0);
    expect(["grpc-status: 0", "grpc-status:0", "{}"]).toContain(read.end);
    expect(read.rstCode).toBe(0);
  });

  it("with gzip accepted, a burst: every message of 1 KiB or more arrives compressed, as connect sends it", async () => {
    const read = await pausedTurn({ ...headers, [acceptEncoding]: "gzip" }, { tokens: TOKENS });
    expect(read.compressed).toBeGreaterThan(0);
    expect(read.largePlain).toBe(0);
    expect(sequenceProblem(read.responses)).toBeUndefined();
    expect(textOf(read.responses)).toBe("tok ".repeat(TOKENS));
    expect(["grpc-status: 0", "grpc-status:0", "{}"]).toContain(read.end);
  });
});
