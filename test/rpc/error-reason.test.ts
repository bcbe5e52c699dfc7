// The error's registry reason reaches RPC clients, not just its status: in the
// `roz-error-reason` metadata and as a standard google.rpc.ErrorInfo detail.
import { anyUnpack, AnySchema } from "@bufbuild/protobuf/wkt";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ErrorInfo, ErrorInfoSchema } from "../../src/gen/google/rpc/error_details_pb.js";
import { AgentService, type TeamEvent, WatchTeamRequestSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { createGrpcJsClient, req, type RozGrpcJsClient } from "../support/grpc-js-client.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { openConnectSession } from "../server/connect-session.ts";

const ORIGIN = "http://console.example";

let server: TestServer;
let client: RozGrpcJsClient;
beforeAll(async () => {
  server = await startServer({ ROZ_KEEPALIVE_INTERVAL_MS: "3600000", ROZ_CORS_ORIGINS: ORIGIN });
  client = createGrpcJsClient(server.url);
});
afterAll(async () => {
  client?.close();
  await server?.close();
});

/** The ErrorInfo details of a gRPC `grpc-status-details-bin` trailer (a google.rpc.Status). */
function errorInfosOf(statusDetails: Buffer): ErrorInfo[] {
  const found: ErrorInfo[] = [];
  const reader = new BinaryReader(statusDetails);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 3 && wireType === WireType.LengthDelimited) {
      const info = anyUnpack(fromBinary(AnySchema, reader.bytes()), ErrorInfoSchema);
      if (info) found.push(info);
    } else {
      reader.skip(wireType);
    }
  }
  return found;
}

/** What a grpc-js client can read of an error: status, the reason trailer, the ErrorInfo details. */
function grpcJsReasons(status: grpc.StatusObject) {
  const details = status.metadata.get("grpc-status-details-bin")[0];
  return {
    code: status.code,
    trailer: status.metadata.get("roz-error-reason"),
    infos: details === undefined ? [] : errorInfosOf(Buffer.from(details)).map((i) => ({ reason: i.reason, domain: i.domain })),
  };
}

describe("grpc-js reads the status message as written", () => {
  // The gRPC protocol percent-encodes only bytes outside 0x20–0x7E (and `%`): grpc-js decodes
  // just those, so a URI-component encoding would show it `nowhere%2Fnone` and `%3A`.
  it("of a refused start and of a WatchTeam error, with `/`, `:`, quotes and non-ASCII intact", async () => {
    const call = client.openSession();
    call.send(req.start({ model: "nowhere/none" }));
    const status = await call.status;
    expect(status.details).toContain('"nowhere/none"');
    expect(status.details).not.toMatch(/%[0-9A-F]{2}/);

    const stream = client.client.makeServerStreamRequest(
      "/roz.v1.AgentService/WatchTeam",
      (r: { taskId: string }) => Buffer.from(toBinary(WatchTeamRequestSchema, create(WatchTeamRequestSchema, r))),
      (b: Buffer): TeamEvent | Buffer => b,
      { taskId: "a/b: ü" },
    );
    stream.on("error", () => {});
    stream.on("data", () => {});
    const watched = await new Promise<grpc.StatusObject>((resolve) => stream.on("status", resolve));
    expect(watched.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(watched.details).toContain("a/b: ü");
  });
});

describe("grpc-js sees the reason", () => {
  it("of a refused start: FAILED_PRECONDITION with model_unavailable", async () => {
    const call = client.openSession();
    call.send(req.start({ model: "nowhere/none" }));
    const status = await call.status;
    expect(grpcJsReasons(status)).toEqual({
      code: grpc.status.FAILED_PRECONDITION,
      trailer: ["model_unavailable"],
      infos: [{ reason: "model_unavailable", domain: "roz.dev" }],
    });
  });

  it("of a WatchTeam error: INVALID_ARGUMENT with invalid_argument", async () => {
    const stream = client.client.makeServerStreamRequest(
      "/roz.v1.AgentService/WatchTeam",
      (r: { taskId: string }) => Buffer.from(toBinary(WatchTeamRequestSchema, create(WatchTeamRequestSchema, r))),
      (b: Buffer): TeamEvent | Buffer => b,
      { taskId: "not-a-uuid" },
    );
    stream.on("error", () => {});
    stream.on("data", () => {});
    const status = await new Promise<grpc.StatusObject>((resolve) => stream.on("status", resolve));
    expect(grpcJsReasons(status)).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      trailer: ["invalid_argument"],
      infos: [{ reason: "invalid_argument", domain: "roz.dev" }],
    });
  });
});

/** What a connect-node client can read of an error: the code, the reason metadata, the ErrorInfo details. */
const connectReasons = (error: ConnectError | undefined) => ({
  code: error?.code,
  metadata: error?.metadata.get("roz-error-reason"),
  infos: error?.findDetails(ErrorInfoSchema).map((i) => ({ reason: i.reason, domain: i.domain })),
});

const transports: [string, () => Transport][] = [
  ["gRPC", () => createGrpcTransport({ baseUrl: server.url })],
  ["Connect", () => createConnectTransport({ httpVersion: "2", baseUrl: server.url })],
];

describe.each(transports)("connect-node over %s sees the reason", (_name, transport) => {
  it("of a refused start", async () => {
    const session = openConnectSession(transport());
    session.send({ request: { case: "start", value: { model: "nowhere/none" } } });
    expect(connectReasons(await session.done)).toEqual({
      code: Code.FailedPrecondition,
      metadata: "model_unavailable",
      infos: [{ reason: "model_unavailable", domain: "roz.dev" }],
    });
  });
});

const unaryTransports: [string, () => Transport][] = [
  ...transports,
  ["Connect JSON over HTTP/1.1", () => createConnectTransport({ httpVersion: "1.1", baseUrl: server.url, useBinaryFormat: false })],
  ["gRPC-Web", () => createGrpcWebTransport({ httpVersion: "1.1", baseUrl: server.url })],
];

describe.each(unaryTransports)("connect-node over %s sees the reason", (_name, transport) => {
  it("of a WatchTeam error", async () => {
    let error: ConnectError | undefined;
    try {
      for await (const event of createClient(AgentService, transport()).watchTeam({ taskId: "not-a-uuid" }, { timeoutMs: 10_000 })) void event;
    } catch (err) {
      error = ConnectError.from(err);
    }
    expect(connectReasons(error)).toEqual({
      code: Code.InvalidArgument,
      metadata: "invalid_argument",
      infos: [{ reason: "invalid_argument", domain: "roz.dev" }],
    });
  });
});

describe("a browser page", () => {
  it("may read the roz-error-reason header: CORS exposes it (Connect unary calls send it as a header)", async () => {
    const response = await fetch(`${server.url}/roz.v1.AgentService/WatchTeam`, {
      method: "POST",
      headers: { origin: ORIGIN, "content-type": "application/connect+json", "connect-protocol-version": "1" },
      // One enveloped JSON message: a server-streaming call over the Connect protocol.
      body: envelope(JSON.stringify({ taskId: "not-a-uuid" })),
    });
    await response.arrayBuffer();
    const exposed = (response.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/\s*,\s*/);
    expect(exposed).toContain("roz-error-reason");
  });
});

/** A Connect streaming envelope: flags 0, big-endian length, the message. */
function envelope(json: string): Uint8Array<ArrayBuffer> {
  const body = new TextEncoder().encode(json);
  const frame = new Uint8Array(new ArrayBuffer(5 + body.length));
  new DataView(frame.buffer).setUint32(1, body.length);
  frame.set(body, 5);
  return frame;
}
