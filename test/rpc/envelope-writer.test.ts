// The writer that puts a session's responses straight onto an HTTP/2 stream, on a real
// stream between a Node HTTP/2 server and client: framing and order, waiting while the
// client does not read (and only then), and what ends a wait.
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { EnvelopeWriter } from "../../src/rpc/envelope-writer.ts";
import { parseGrpcFrames } from "../server/raw-h2.ts";

interface Pair {
  /** The server's side of the one stream, headers sent. */
  server: http2.ServerHttp2Stream;
  /** The client's side, paused: it reads nothing until resumed. */
  client: http2.ClientHttp2Stream;
  received: Buffer[];
  close(): Promise<void>;
}

const open: Pair[] = [];
afterEach(async () => {
  for (const pair of open.splice(0)) await pair.close();
});

/** A server and a client with a 1 KB receive window, one stream between them. */
async function streamPair(): Promise<Pair> {
  const server = http2.createServer();
  const serverStream = new Promise<http2.ServerHttp2Stream>((resolve) =>
    server.on("stream", (stream) => {
      stream.respond({ ":status": 200, "content-type": "application/grpc" });
      resolve(stream);
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { settings: { initialWindowSize: 1024 } });
  session.on("error", () => {});
  const client = session.request({ ":method": "POST", ":path": "/x", "content-type": "application/grpc" });
  client.on("error", () => {});
  const received: Buffer[] = [];
  client.on("data", (chunk: Buffer) => received.push(chunk));
  client.pause();
  const pair: Pair = {
    server: await serverStream,
    client,
    received,
    close: async () => {
      session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  open.push(pair);
  return pair;
}

const message = (i: number): Uint8Array => Buffer.from(`message ${i} `.padEnd(200, "."));
const settledWithin = (promise: Promise<void>, ms: number): Promise<boolean> =>
  Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);

/** Writes messages until the stream stops taking them; returns how many, and the wait. */
function fill(writer: EnvelopeWriter): { written: number; wait: Promise<void> } {
  for (let i = 0; i < 10_000; i++) {
    const wait = writer.write([message(i)]);
    if (wait) return { written: i + 1, wait };
  }
  throw new Error("the stream never pushed back");
}

describe("EnvelopeWriter", () => {
  it("waits while the client reads nothing, goes on once it reads, and every message arrives framed and in order", async () => {
    const { server, client, received } = await streamPair();
    const writer = new EnvelopeWriter(server, false, new AbortController().signal);
    expect(writer.takes([message(0)])).toBe(true);
    const { written, wait } = fill(writer);
    expect(await settledWithin(wait, 200)).toBe(false);
    client.resume();
    expect(await settledWithin(wait, 5000)).toBe(true);
    server.end();
    await new Promise((resolve) => client.on("end", resolve));
    const frames = parseGrpcFrames(Buffer.concat(received));
    expect(frames.map((f) => f.toString())).toEqual(Array.from({ length: written }, (_, i) => Buffer.from(message(i)).toString()));
    // Flags 0: not compressed.
    expect(Buffer.concat(received)[0]).toBe(0);
  });

  it("a wait ends when the client resets the stream, and the next write fails the call as cancelled", async () => {
    const { server, client } = await streamPair();
    const writer = new EnvelopeWriter(server, false, new AbortController().signal);
    const { wait } = fill(writer);
    client.close(http2.constants.NGHTTP2_CANCEL);
    expect(await settledWithin(wait, 5000)).toBe(true);
    let error: unknown;
    try {
      writer.write([message(0)]);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Canceled);
  });

  it("a wait ends when the call's signal aborts (a deadline), though the client still reads nothing", async () => {
    const { server } = await streamPair();
    const call = new AbortController();
    const { wait } = fill(new EnvelopeWriter(server, false, call.signal));
    expect(await settledWithin(wait, 100)).toBe(false);
    call.abort();
    expect(await settledWithin(wait, 1000)).toBe(true);
  });

  it("leaves to connect what connect would compress", async () => {
    const { server } = await streamPair();
    const compressing = new EnvelopeWriter(server, true, new AbortController().signal);
    expect(compressing.takes([new Uint8Array(1023)])).toBe(true);
    expect(compressing.takes([new Uint8Array(10), new Uint8Array(1024)])).toBe(false);
    expect(new EnvelopeWriter(server, false, new AbortController().signal).takes([new Uint8Array(1 << 20)])).toBe(true);
  });
});
