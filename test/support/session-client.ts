/**
 * One StreamSession client interface over two independent client stacks, so that a test
 * can run the same protocol steps through @grpc/grpc-js (gRPC over h2c, Node's http2
 * client as grpc-js drives it) or @connectrpc/connect-node (the Connect protocol over h2c).
 * Both speak protobuf-es messages: grpc-js is given protobuf-es (de)serializers for the
 * method, so tests compare the same typed values whichever client carried them.
 */
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { AgentService, SessionRequestSchema, type SessionResponse, SessionResponseSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { AsyncQueue } from "../../src/session/index.ts";
import { MessageQueue, StreamEndedError } from "./grpc-js-client.ts";

export type SessionRequestInit = MessageInitShape<typeof SessionRequestSchema>;

/** A SessionRequest in the protobuf binary format (what a binary client puts in an envelope). */
export const sessionRequestBytes = (request: SessionRequestInit): Buffer => Buffer.from(toBinary(SessionRequestSchema, create(SessionRequestSchema, request)));

/** Which client library carries the call: `grpc-js` (gRPC) or `connect` (connect-node, Connect protocol). */
export type ClientKind = "grpc-js" | "connect";

/** How a call ended, as a gRPC status code (Connect's `Code` uses the same numbers; 0 = OK). */
export interface EndStatus {
  code: number;
  message: string;
}

/** One open StreamSession call. */
export interface SessionClient {
  readonly kind: ClientKind;
  /** Responses in arrival order (`seen` keeps those already read). */
  readonly responses: MessageQueue<SessionResponse>;
  send(request: SessionRequestInit): void;
  next(timeoutMs?: number): Promise<SessionResponse>;
  /** Half-closes the request stream (a clean end of the session). */
  end(): void;
  /** Breaks the call without a half-close (grpc-js: RST_STREAM CANCEL; connect: abort). */
  cancel(): void;
  /** Settles once the call has ended; never rejects. */
  readonly status: Promise<EndStatus>;
  /** True once `status` has settled. */
  readonly ended: boolean;
}

/** Opens calls against one server with one client library; `close()` releases its connection. */
export interface SessionClientFactory {
  readonly kind: ClientKind;
  /** Opens a call; `headers` become request metadata (e.g. `authorization`). */
  open(headers?: Record<string, string>): SessionClient;
  close(): void;
}

const METHOD = "/roz.v1.AgentService/StreamSession";

/** A factory for `kind` against `baseUrl` (`http://127.0.0.1:port`, h2c). */
export function sessionClientFactory(kind: ClientKind, baseUrl: string): SessionClientFactory {
  return kind === "grpc-js" ? grpcJsFactory(baseUrl) : connectFactory(baseUrl);
}

function grpcJsFactory(baseUrl: string): SessionClientFactory {
  // Its own connection, like the connect factory's: grpc-js would otherwise share one
  // subchannel (one HTTP/2 connection) among every client of the same target.
  const client = new grpc.Client(new URL(baseUrl).host, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 });
  const serialize = sessionRequestBytes;
  const deserialize = (bytes: Buffer): SessionResponse => fromBinary(SessionResponseSchema, bytes);
  return {
    kind: "grpc-js",
    open(headers = {}) {
      const metadata = new grpc.Metadata();
      for (const [name, value] of Object.entries(headers)) metadata.set(name, value);
      const call = client.makeBidiStreamRequest(METHOD, serialize, deserialize, metadata);
      let ended = false;
      let final: grpc.StatusObject | undefined;
      const responses = new MessageQueue<SessionResponse>(() => new StreamEndedError(final));
      const status = new Promise<EndStatus>((resolve) =>
        call.on("status", (s: grpc.StatusObject) => {
          final = s;
          ended = true;
          resolve({ code: s.code, message: s.details });
          // 'end' follows after buffered data; release readers even if it does not come.
          setTimeout(() => responses.end(), 200).unref();
        }),
      );
      call.on("data", (message: SessionResponse) => responses.push(message));
      call.on("end", () => responses.end());
      call.on("error", () => {}); // errors arrive as the status too
      return {
        kind: "grpc-js",
        responses,
        send: (request) => void call.write(request),
        next: (timeoutMs) => responses.next(timeoutMs),
        end: () => void call.end(),
        cancel: () => call.cancel(),
        status,
        get ended() {
          return ended;
        },
      };
    },
    close: () => client.close(),
  };
}

function connectFactory(baseUrl: string): SessionClientFactory {
  // Own session manager, so that close() really drops the HTTP/2 connection.
  const sessionManager = new Http2SessionManager(baseUrl);
  const transport: Transport = createConnectTransport({ httpVersion: "2", baseUrl, sessionManager });
  const client = createClient(AgentService, transport);
  return {
    kind: "connect",
    open(headers = {}) {
      const requests = new AsyncQueue<SessionRequestInit>();
      const abort = new AbortController();
      let ended = false;
      const responses = new MessageQueue<SessionResponse>(() => new StreamEndedError(undefined));
      const status = (async (): Promise<EndStatus> => {
        try {
          for await (const response of client.streamSession(requests, { signal: abort.signal, headers })) responses.push(response);
          return { code: 0, message: "" };
        } catch (err) {
          const error = ConnectError.from(err);
          return { code: error.code, message: error.rawMessage };
        } finally {
          ended = true;
          responses.end();
        }
      })();
      return {
        kind: "connect",
        responses,
        send: (request) => requests.push(request),
        next: (timeoutMs) => responses.next(timeoutMs),
        end: () => requests.end(),
        cancel: () => abort.abort(),
        status,
        get ended() {
          return ended;
        },
      };
    },
    close: () => sessionManager.abort(),
  };
}
