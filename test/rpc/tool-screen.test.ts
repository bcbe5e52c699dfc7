import * as zlib from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { AttachSessionRequestSchema, SendToSessionRequestSchema, SessionRequestSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { cutToolLists, screenedEnvelopes, screenToolLists } from "../../src/rpc/screens/index.ts";
import { grpcFrame, parseGrpcFrames } from "../server/raw-h2.ts";
import { type SessionRequestInit, sessionRequestBytes as bytesOf } from "../support/session-client.ts";
import { rq, tool } from "../support/session-protocol.ts";

const tools = (n: number, prefix = "t") => Array.from({ length: n }, (_, i) => tool(`${prefix}${i}`));
const decode = (bytes: Uint8Array) => fromBinary(SessionRequestSchema, bytes);
const envelope = (message: Uint8Array, compressed = false) => grpcFrame(Buffer.from(message), { compressed });
async function collect(chunks: Uint8Array[], maxTools: number): Promise<Buffer> {
  async function* source() {
    yield* chunks;
  }
  const out: Uint8Array[] = [];
  for await (const chunk of screenedEnvelopes(source(), maxTools, 4 * 1024 * 1024)) out.push(chunk);
  return Buffer.concat(out);
}

interface ScreenCall {
  /** The AgentService method. */
  name: string;
  contentType: string | undefined;
  headers?: Record<string, string>;
  maxTools?: number;
  maxMessageBytes?: number;
}

/**
 * A request to a method whose body arrives as `chunks`, with the screen applied as the server
 * applies it: whether the screen took the body over, the headers connect then sees, and the
 * body connect then reads.
 */
function screenedRequest(call: ScreenCall, chunks: readonly Uint8Array[] = []) {
  const body = async function* (): AsyncGenerator<Uint8Array> {
    yield* chunks;
  };
  const request = { headers: { ...call.headers } as Record<string, string>, [Symbol.asyncIterator]: body };
  screenToolLists(request, `/roz.v1.AgentService/${call.name}`, call.contentType, call.maxTools ?? 10, call.maxMessageBytes ?? 4 * 1024 * 1024);
  const read = async (): Promise<Buffer> => {
    const out: Uint8Array[] = [];
    for await (const chunk of request) out.push(chunk);
    return Buffer.concat(out);
  };
  return { took: request[Symbol.asyncIterator] !== body, headers: request.headers, read };
}

/** `bytes` in chunks of `size`. */
const inChunks = (bytes: Uint8Array, size: number): Uint8Array[] =>
  Array.from({ length: Math.ceil(bytes.byteLength / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));

describe("cutToolLists", () => {
  it("cuts register_tools, start and user_message lists to max + 1 and keeps every other field", () => {
    const register = decode(cutToolLists(bytesOf(rq.register(tools(40), "ide", "context")), 10));
    expect(register.request.case).toBe("registerTools");
    const registered = register.request.value as { tools: { name: string }[]; source: string; systemContext: string };
    expect(registered.tools.map((t) => t.name)).toEqual(tools(11).map((t) => t.name));
    expect(registered).toMatchObject({ source: "ide", systemContext: "context" });

    const start = decode(cutToolLists(bytesOf(rq.start({ tools: tools(30), model: "scripted" })), 10));
    expect(start.request.case).toBe("start");
    expect((start.request.value as { tools: unknown[]; model?: string }).tools).toHaveLength(11);
    expect((start.request.value as { model?: string }).model).toBe("scripted");

    const user = { request: { case: "userMessage", value: { content: "hi", tools: tools(12) } } } as SessionRequestInit;
    const cut = decode(cutToolLists(bytesOf(user), 10));
    expect(cut.request.value).toMatchObject({ content: "hi" });
    expect((cut.request.value as { tools: unknown[] }).tools).toHaveLength(11);
  });

  it("cuts a list spread over repeated occurrences of its field (a decoder merges them)", () => {
    const occurrence = Buffer.from(bytesOf(rq.register(tools(10))));
    const repeated = Buffer.concat(Array.from({ length: 60 }, () => occurrence));
    expect((decode(repeated).request.value as { tools: unknown[] }).tools).toHaveLength(600);
    expect((decode(cutToolLists(repeated, 10)).request.value as { tools: unknown[] }).tools).toHaveLength(11);
  });

  it("reads ten-byte varints and unknown groups (they once made a message unparsable, so passed uncut)", () => {
    const negative = Buffer.from([0xa8, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]); // field 501, varint -1
    const group = Buffer.from([0xab, 0x1f, 0x08, 0x01, 0xac, 0x1f]); // field 501 start group { field 1: 1 } end group
    for (const extra of [negative, group]) {
      const request = Buffer.concat([Buffer.from(bytesOf(rq.register(tools(40)))), extra]);
      expect((decode(request).request.value as { tools: unknown[] }).tools).toHaveLength(40);
      expect((decode(cutToolLists(request, 10)).request.value as { tools: unknown[] }).tools).toHaveLength(11);
    }
  });

  it("keeps only what a decoder keeps of a oneof: a rival member in between discards the earlier lists", () => {
    const twice = (n: number) => Buffer.concat([bytesOf(rq.start({ tools: tools(n, "a") })), bytesOf(rq.ping()), bytesOf(rq.start({ tools: tools(n, "b") }))]);
    // 8 + 8 is not over 10: the decoder keeps the last start only.
    expect(Buffer.from(cutToolLists(twice(8), 10)).equals(twice(8))).toBe(true);
    // Each start over the cap: the one the decoder keeps still has 11.
    const decoded = decode(cutToolLists(twice(20), 10));
    expect(decoded.request.case).toBe("start");
    expect((decoded.request.value as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(tools(11, "b").map((t) => t.name));
  });

  it("cuts the lists before bytes that do not parse, and keeps those bytes (the decoder still fails on them)", () => {
    const broken = Buffer.concat([bytesOf(rq.register(tools(40))), Buffer.from([0x0a])]);
    const cut = cutToolLists(broken, 10);
    expect(cut.byteLength).toBeLessThan(broken.byteLength / 2);
    expect(cut.at(-1)).toBe(0x0a);
    expect(() => decode(cut)).toThrow();
    expect(decode(cut.subarray(0, cut.byteLength - 1)).request.value).toMatchObject({ tools: expect.any(Array) });
    expect((decode(cut.subarray(0, cut.byteLength - 1)).request.value as { tools: unknown[] }).tools).toHaveLength(11);
  });

  it("leaves lists within the cap, other requests and bytes that do not parse as they are", () => {
    for (const bytes of [bytesOf(rq.register(tools(10))), bytesOf(rq.user("x".repeat(100))), Uint8Array.from([0x4a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])]) {
      expect(cutToolLists(bytes, 10)).toBe(bytes);
    }
  });
});

describe("screenedEnvelopes", () => {
  const big = bytesOf(rq.register(tools(600)));
  const small = bytesOf(rq.ping());
  const stream = Buffer.concat([envelope(small), envelope(big), envelope(small)]);

  it("passes any chunking on and screens each message", async () => {
    const expected = Buffer.concat([envelope(small), envelope(cutToolLists(big, 512)), envelope(small)]);
    expect(decode(cutToolLists(big, 512)).request.value).toMatchObject({ tools: expect.any(Array) });
    for (const size of [1, 3, 5, 7, 1000, stream.byteLength]) {
      const chunks: Uint8Array[] = [];
      for (let i = 0; i < stream.byteLength; i += size) chunks.push(stream.subarray(i, i + size));
      expect((await collect(chunks, 512)).equals(expected), `chunks of ${size}`).toBe(true);
    }
  });

  it("passes on at once everything from an envelope declaring more than the message limit", async () => {
    const header = Buffer.from([0, 0x80, 0, 0, 1]); // 2 GiB declared
    let release: () => void = () => {};
    async function* source() {
      yield header;
      yield Buffer.alloc(1000, 7);
      await new Promise<void>((resolve) => (release = resolve)); // the rest never comes
    }
    const out = screenedEnvelopes(source(), 512, 4 * 1024 * 1024);
    expect((await out.next()).value).toEqual(header);
    expect((await out.next()).value).toEqual(Buffer.alloc(1000, 7));
    const last = out.next();
    await new Promise((resolve) => setImmediate(resolve));
    release();
    expect((await last).done).toBe(true);
  });

  it("cuts the shortest message over the cap, and passes one within it on as it is", async () => {
    // Four tools without a name are two bytes each: the shortest register_tools over a cap of 2.
    const empty = Array.from({ length: 4 }, () => ({}));
    const shortest = bytesOf({ request: { case: "registerTools", value: { tools: empty } } });
    const cut = await collect([envelope(shortest)], 2);
    expect(decode(cut.subarray(5)).request.value).toMatchObject({ tools: [{}, {}, {}] });
    const within = bytesOf({ request: { case: "registerTools", value: { tools: empty.slice(0, 2) } } });
    expect((await collect([envelope(within)], 2)).equals(envelope(within))).toBe(true);
  });

  it("takes a message in as many chunks as the client sends, a byte each", async () => {
    const huge = bytesOf(rq.register(tools(15_000))); // ≈ 270 KB: more chunks than a spread takes
    const bytewise = (bytes: Uint8Array) => Array.from({ length: bytes.byteLength }, (_, i) => bytes.subarray(i, i + 1));
    expect((await collect(bytewise(envelope(huge)), 512)).equals(envelope(cutToolLists(huge, 512)))).toBe(true);
    expect((await collect(bytewise(envelope(huge)), 20_000)).equals(envelope(huge))).toBe(true);
    const truncated = envelope(huge).subarray(0, -1);
    expect((await collect(bytewise(truncated), 512)).equals(truncated)).toBe(true);
  });

  it("lets go of the body when connect stops reading, or passes a failure up", async () => {
    let released = 0;
    async function* source() {
      try {
        yield envelope(small);
        yield envelope(small);
      } finally {
        released++;
      }
    }
    const stopped = screenedEnvelopes(source(), 512, 4 * 1024 * 1024);
    await stopped.next();
    expect(await stopped.return?.()).toEqual({ value: undefined, done: true });
    expect(released).toBe(1);
    expect((await stopped.next()).done).toBe(true);

    // Returned while a read is under way: what that read brings is not handed on.
    let deliver: (chunk: Uint8Array) => void = () => {};
    const slow: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise((resolve) => (deliver = (chunk) => resolve({ value: chunk, done: false }))),
        return: async () => ({ value: undefined, done: true }),
      }),
    };
    const returned = screenedEnvelopes(slow, 512, 4 * 1024 * 1024);
    const reading = returned.next();
    await returned.return?.();
    deliver(envelope(small));
    expect(await reading).toEqual({ value: undefined, done: true });
    expect((await returned.next()).done).toBe(true);

    const failed = screenedEnvelopes(source(), 512, 4 * 1024 * 1024);
    await failed.next();
    const failure = new Error("the pipeline failed");
    await expect(failed.throw?.(failure)).rejects.toBe(failure);
    expect(released).toBe(2);
  });

  it("passes compressed messages and a truncated tail on unchanged", async () => {
    const compressed = envelope(big, true);
    expect((await collect([compressed], 512)).equals(compressed)).toBe(true);
    const truncated = stream.subarray(0, stream.byteLength - 3);
    const tail = envelope(small).subarray(0, -3);
    const expected = Buffer.concat([envelope(small), envelope(cutToolLists(big, 512)), tail]);
    expect((await collect([truncated], 512)).equals(expected)).toBe(true);
  });
});

describe("screenToolLists", () => {
  /** Whether the screen took over the body of a request to `name` of `contentType`. */
  const screens = (name: string, contentType: string | undefined): boolean =>
    screenedRequest({ name, contentType, headers: { "content-length": "10" }, maxTools: 512 }).took;

  it("screens the binary and JSON content types of the calls that carry tools only", () => {
    const screened = ["application/grpc", "application/grpc+proto", "application/grpc-web", "application/grpc-web+proto", "application/connect+proto"];
    screened.push("application/proto", "application/grpc+json", "application/grpc-web+json", "application/connect+json", "application/json");
    for (const name of ["StreamSession", "SendToSession", "AttachSession"]) {
      for (const type of screened) expect(screens(name, type), `${name} ${type}`).toBe(true);
      for (const type of ["application/grpc-web-text", "text/plain", undefined]) expect(screens(name, type), `${name} ${type}`).toBe(false);
    }
    for (const name of ["ListSessions", "WatchTeam", "Nope"]) expect(screens(name, "application/grpc"), name).toBe(false);
  });

  it("a Connect unary body loses its declared length (a cut one is shorter)", () => {
    const { headers } = screenedRequest({ name: "SendToSession", contentType: "application/proto", headers: { "content-length": "10" }, maxTools: 512 });
    expect(headers["content-length"]).toBeUndefined();
  });
});

describe("nested carriers", () => {
  const sendTo = (request: SessionRequestInit) =>
    toBinary(SendToSessionRequestSchema, create(SendToSessionRequestSchema, { sessionId: "s", request: create(SessionRequestSchema, request) }));
  /** The message as connect would read it from a Connect unary call to `name`, in 7-byte chunks. */
  const collectMessage = (bytes: Uint8Array, name: string): Promise<Buffer> =>
    screenedRequest({ name, contentType: "application/proto" }, inChunks(bytes, 7)).read();

  it("SendToSession: the register_tools inside `request` is cut; the other fields stay as they were", async () => {
    const bytes = sendTo(rq.register(tools(40), "ide", "context"));
    const out = await collectMessage(bytes, "SendToSession");
    const decoded = fromBinary(SendToSessionRequestSchema, out);
    expect(decoded.sessionId).toBe("s");
    expect(decoded.request?.request).toMatchObject({ case: "registerTools", value: { source: "ide", tools: expect.any(Array) } });
    expect((decoded.request!.request.value as { tools: unknown[] }).tools).toHaveLength(11);
  });

  it("SendToSession: a list under the cap passes byte for byte", async () => {
    const bytes = sendTo(rq.register(tools(10)));
    expect(Buffer.from(await collectMessage(bytes, "SendToSession")).equals(Buffer.from(bytes))).toBe(true);
  });

  it("SendToSession: two `request` occurrences that a decoder merges are cut to 11 tools in all", async () => {
    const bytes = Buffer.concat([sendTo(rq.register(tools(8, "a"))), sendTo(rq.register(tools(8, "b")))]);
    const decoded = fromBinary(SendToSessionRequestSchema, await collectMessage(bytes, "SendToSession"));
    expect((decoded.request!.request.value as { tools: unknown[] }).tools).toHaveLength(11);
  });

  it("AttachSession: the tools of `start` are cut", async () => {
    const bytes = toBinary(
      AttachSessionRequestSchema,
      create(AttachSessionRequestSchema, { target: { case: "start", value: { tools: tools(30), model: "m" } } }),
    );
    const decoded = fromBinary(AttachSessionRequestSchema, await collectMessage(bytes, "AttachSession"));
    expect(decoded.target).toMatchObject({ case: "start", value: { model: "m" } });
    expect((decoded.target.value as { tools: unknown[] }).tools).toHaveLength(11);
  });
});

describe("JSON messages", () => {
  /** The message as connect would read it from a Connect unary JSON call to `name`. */
  const screenedJson = (message: unknown, name: string): Promise<Buffer> => {
    const bytes = Buffer.from(typeof message === "string" ? message : JSON.stringify(message));
    return screenedRequest({ name, contentType: "application/json" }, inChunks(bytes, 1000)).read();
  };
  const names = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `t${i}` }));

  it("cuts lists under either name of a field (JSON or .proto), nested ones too", async () => {
    const camel = JSON.parse(
      (await screenedJson({ sessionId: "s", request: { registerTools: { tools: names(40), source: "ide" } } }, "SendToSession")).toString(),
    );
    expect(camel).toEqual({ sessionId: "s", request: { registerTools: { tools: names(11), source: "ide" } } });
    const snake = JSON.parse((await screenedJson({ session_id: "s", request: { register_tools: { tools: names(40) } } }, "SendToSession")).toString());
    expect(snake.request.register_tools.tools).toHaveLength(11);
    const start = JSON.parse((await screenedJson({ start: { tools: names(12), model: "m" } }, "AttachSession")).toString());
    expect(start).toEqual({ start: { tools: names(11), model: "m" } });
  });

  it("passes a message within the cap, one with few objects and one that does not parse byte for byte", async () => {
    for (const message of [
      JSON.stringify({ request: { registerTools: { tools: names(10) } }, sessionId: "s" }),
      JSON.stringify({ request: { userMessage: { content: "x".repeat(5000) } } }),
      `{"request": {"registerTools": {"tools": [${"{},".repeat(40)}`,
    ]) {
      expect((await screenedJson(message, "SendToSession")).toString()).toBe(message);
    }
  });

  it("reads JSON with a byte-order mark as connect does", async () => {
    const cut = await screenedJson(`\ufeff${JSON.stringify({ sessionId: "s", request: { registerTools: { tools: names(40) } } })}`, "SendToSession");
    expect(JSON.parse(new TextDecoder().decode(cut)).request.registerTools.tools).toHaveLength(11);
  });

  it("drops the elements beyond the cap from the text itself, whatever its layout, escapes and strings", async () => {
    const tricky = names(40).map((t, i) => ({
      ...t,
      description: i === 3 ? 'a "quoted" [bracket], {brace} and \\ backslash' : "",
      parameters: { nested: [[1, 2], { a: [] }] },
    }));
    const expected = tricky.slice(0, 11);
    for (const text of [
      JSON.stringify({ sessionId: "s", request: { registerTools: { tools: tricky } } }, null, 2),
      // A key written with an escape is the same key to a parser.
      `{"sessionId":"s","request":{"registerTools":{"\\u0074ools":${JSON.stringify(tricky)}}}}`,
      // Duplicate keys: a parser keeps the last; both are cut.
      `{"sessionId":"s","request":{"registerTools":{"tools":${JSON.stringify(tricky)},"tools":${JSON.stringify(tricky)}}}}`,
    ]) {
      const cut = JSON.parse((await screenedJson(text, "SendToSession")).toString());
      expect(cut).toEqual({ sessionId: "s", request: { registerTools: { tools: expected } } });
    }
  });

  it("a list of exactly the cap + 1 and malformed text pass as they came", async () => {
    for (const text of [
      JSON.stringify({ sessionId: "s", request: { registerTools: { tools: names(11) } } }),
      `{"sessionId":"s","request":{"registerTools":{"tools":[${"{},".repeat(40)}{}]}}`.replace("]}}", "]}"),
      `{"sessionId":"s","request":{"registerTools":{"tools":[${'{"name":"a"},'.repeat(40)}{"name":"unterminated}]}}}`,
    ]) {
      expect((await screenedJson(text, "SendToSession")).toString()).toBe(text);
    }
  });

  it("a message nested deeper than 80 levels is refused before anything parses it", async () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const text = `{"sessionId":"s","request":{"registerTools":{"tools":[{"name":"d","x":${deep}},${JSON.stringify(names(40)).slice(1)}}}}`;
    await expect(screenedJson(text, "SendToSession")).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringContaining("nested deeper than 80 levels"),
    });
    // 80 levels pass (a Struct of 64 inside the messages around it), with their lists cut.
    const within = `${"[".repeat(70)}${"]".repeat(70)}`;
    const kept = `{"sessionId":"s","request":{"registerTools":{"tools":[{"name":"d","x":${within}},${JSON.stringify(names(40)).slice(1)}}}}`;
    expect(JSON.parse((await screenedJson(kept, "SendToSession")).toString()).request.registerTools.tools).toHaveLength(11);
  });
});

describe("Connect unary bodies left to connect", () => {
  const screenedUnary = (headers: Record<string, string>) => {
    const { took, headers: after } = screenedRequest({
      name: "SendToSession",
      contentType: "application/proto",
      headers,
      maxTools: 512,
      maxMessageBytes: 1000,
    });
    return { screened: took, headers: after };
  };

  it("a body of an encoding the screen cannot read is left to connect", () => {
    expect(screenedUnary({ "content-encoding": "zstd", "content-length": "10" })).toEqual({
      screened: false,
      headers: { "content-encoding": "zstd", "content-length": "10" },
    });
  });

  it("a body declared over the limit keeps its length, and connect refuses it from the header", () => {
    expect(screenedUnary({ "content-length": "1001" })).toEqual({ screened: false, headers: { "content-length": "1001" } });
  });
});

describe("compressed messages", () => {
  const register = bytesOf(rq.register(tools(40)));
  const small = bytesOf(rq.register(tools(5)));

  for (const [encoding, compress, decompress] of [
    ["gzip", zlib.gzipSync, zlib.gunzipSync],
    ["br", zlib.brotliCompressSync, zlib.brotliDecompressSync],
  ] as const) {
    it(`${encoding}: an envelope is expanded, cut and compressed again; one within the cap passes as it came`, async () => {
      const body = Buffer.concat([envelope(compress(register), true), envelope(compress(small), true)]);
      const out = await screenedRequest({ name: "StreamSession", contentType: "application/grpc", headers: { "grpc-encoding": encoding } }, [body]).read();
      const [first, second] = parseGrpcFrames(out);
      expect((decode(decompress(first!)).request.value as { tools: unknown[] }).tools).toHaveLength(11);
      expect(second!.equals(compress(small))).toBe(true);
      expect(out[0]).toBe(1);
    });

    it(`${encoding}: a Connect unary body is expanded, cut and compressed again`, async () => {
      const message = toBinary(
        SendToSessionRequestSchema,
        create(SendToSessionRequestSchema, { sessionId: "s", request: create(SessionRequestSchema, rq.register(tools(40))) }),
      );
      const out = await screenedRequest({ name: "SendToSession", contentType: "application/proto", headers: { "content-encoding": encoding } }, [
        compress(message),
      ]).read();
      const decoded = fromBinary(SendToSessionRequestSchema, decompress(out));
      expect((decoded.request!.request.value as { tools: unknown[] }).tools).toHaveLength(11);
    });
  }

  it("a message that expands beyond the limit, or is not of its encoding, passes on unchanged (connect refuses it)", async () => {
    const bomb = zlib.gzipSync(Buffer.alloc(2 * 1024 * 1024));
    for (const data of [bomb, Buffer.from("not gzip")]) {
      const call = { name: "StreamSession", contentType: "application/grpc", headers: { "grpc-encoding": "gzip" }, maxMessageBytes: 1024 * 1024 };
      const out = await screenedRequest(call, [envelope(data, true)]).read();
      expect(out.equals(envelope(data, true))).toBe(true);
    }
  });
});
