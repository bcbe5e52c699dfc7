import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/**
 * A `SessionRequest` as @grpc/proto-loader takes it (keepCase): proto field names, one
 * oneof member set, e.g. `{ ping: {} }` or `{ start: { environment_id: "", project_context: [] } }`.
 */
export type WireRequest = Record<string, unknown>;

/**
 * A `SessionResponse` as @grpc/proto-loader decodes it (keepCase, `longs: String`,
 * `defaults`, `oneofs`): `response` names the set member, which holds the message, e.g.
 * `{ seq: "3", response: "pong", pong: {} }`.
 */
export interface WireResponse {
  seq: string;
  response: string;
  [field: string]: unknown;
}

/** The stream ended while a message was awaited; `status` is the call's final status. */
export class StreamEndedError extends Error {
  readonly status: grpc.StatusObject | undefined;
  constructor(status: grpc.StatusObject | undefined) {
    super(`stream ended${status ? ` with status ${status.code} (${grpc.status[status.code]}): ${status.details}` : ""}`);
    this.status = status;
  }
}

/**
 * Messages of a stream, read in order with a timeout. The producer pushes and finally ends
 * it; the consumer awaits `next()`. Reading past the end rejects with `onEnd()`'s error.
 */
export class MessageQueue<T> {
  readonly #items: T[] = [];
  readonly #waiters: { resolve: (item: T) => void; reject: (err: Error) => void }[] = [];
  readonly #onEnd: () => Error;
  #ended = false;
  /** Everything pushed so far, also what was already read (for error messages). */
  readonly seen: T[] = [];

  constructor(onEnd: () => Error) {
    this.#onEnd = onEnd;
  }

  push(item: T): void {
    if (this.#ended) return;
    this.seen.push(item);
    const waiter = this.#waiters.shift();
    if (waiter) waiter.resolve(item);
    else this.#items.push(item);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(this.#onEnd());
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The next message; rejects after `timeoutMs` or when the stream ended first. */
  next(timeoutMs = 5_000): Promise<T> {
    const item = this.#items.shift();
    if (item !== undefined) return Promise.resolve(item);
    if (this.#ended) return Promise.reject(this.#onEnd());
    return new Promise<T>((resolve, reject) => {
      const waiter = {
        resolve: (value: T) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (err: Error) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(new Error(`no message within ${timeoutMs} ms; seen so far: ${JSON.stringify(this.seen, bigintSafe)}`));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  /** Skips messages until one satisfies `match`; the deadline covers the whole search. */
  async nextMatching(match: (item: T) => boolean, timeoutMs = 5_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const item = await this.next(Math.max(1, deadline - Date.now()));
      if (match(item)) return item;
    }
  }

  /** Every remaining message until the end of the stream. */
  async rest(timeoutMs = 5_000): Promise<T[]> {
    const deadline = Date.now() + timeoutMs;
    const out: T[] = [];
    for (;;) {
      if (this.#ended && this.#items.length === 0) return out;
      try {
        out.push(await this.next(Math.max(1, deadline - Date.now())));
      } catch (err) {
        if (this.#ended && this.#items.length === 0) return out;
        throw err;
      }
    }
  }
}

const bigintSafe = (_key: string, value: unknown): unknown => (typeof value === "bigint" ? value.toString() : value);

/** One bidirectional grpc-js call whose responses are read as a queue. */
export interface BidiCall<Req, Res> {
  readonly call: grpc.ClientDuplexStream<Req, Res>;
  readonly responses: MessageQueue<Res>;
  /** Resolves with the final status (OK or not) once the call ended. Never rejects. */
  readonly status: Promise<grpc.StatusObject>;
  send(request: Req): void;
  next(timeoutMs?: number): Promise<Res>;
  /** Half-closes (no more requests). */
  end(): void;
  /** Cancels the call locally (the server sees a reset). */
  cancel(): void;
}

/** Reads a grpc-js duplex call's responses into a queue; any proto's client can use it. */
export function wrapDuplex<Req, Res>(call: grpc.ClientDuplexStream<Req, Res>): BidiCall<Req, Res> {
  let finalStatus: grpc.StatusObject | undefined;
  const responses = new MessageQueue<Res>(() => new StreamEndedError(finalStatus));
  const status = new Promise<grpc.StatusObject>((resolve) =>
    call.on("status", (s: grpc.StatusObject) => {
      finalStatus = s;
      resolve(s);
      // 'end' follows after buffered data; make sure readers are released even if it does not.
      setTimeout(() => responses.end(), 200).unref();
    }),
  );
  call.on("data", (message: Res) => responses.push(message));
  call.on("end", () => responses.end());
  // Errors arrive as statuses too; without a listener they would be thrown.
  call.on("error", () => {});
  return {
    call,
    responses,
    status,
    send: (request) => void call.write(request),
    next: (timeoutMs) => responses.next(timeoutMs),
    end: () => void call.end(),
    cancel: () => call.cancel(),
  };
}

/** A StreamSession call: requests and responses as proto-loader objects. */
export type SessionCall = BidiCall<WireRequest, WireResponse>;

export interface RozGrpcJsClient {
  readonly client: grpc.Client;
  /** Opens `roz.v1.AgentService/StreamSession`. */
  openSession(metadata?: grpc.Metadata): SessionCall;
  /** Opens any bidi method with raw bytes in and out (e.g. an unknown method). */
  openRawBidi(path: string): BidiCall<Buffer, Buffer>;
  close(): void;
}

type AgentServiceClient = grpc.Client & {
  StreamSession(metadata?: grpc.Metadata): grpc.ClientDuplexStream<WireRequest, WireResponse>;
};

const protoDir = fileURLToPath(new URL("../../proto/", import.meta.url));

/**
 * A real @grpc/grpc-js client for `roz.v1.AgentService`, with the service loaded from
 * `proto/roz/v1/agent.proto` by @grpc/proto-loader (the Google well-known types come with
 * protobufjs). `target` is a base URL (`http://` = h2c, `https://` = TLS) or `host:port`;
 * with TLS, `rootCert` is the trusted certificate.
 */
export function createGrpcJsClient(target: string, options: { rootCert?: Buffer; channelOptions?: grpc.ChannelOptions } = {}): RozGrpcJsClient {
  const definition = protoLoader.loadSync("roz/v1/agent.proto", {
    includeDirs: [protoDir],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    roz: { v1: { AgentService: grpc.ServiceClientConstructor } };
  };
  const isUrl = /^[a-z]+:\/\//.test(target);
  const secure = options.rootCert !== undefined || (isUrl && target.startsWith("https:"));
  const address = isUrl ? new URL(target).host : target;
  const credentials = secure ? grpc.credentials.createSsl(options.rootCert ?? null) : grpc.credentials.createInsecure();
  const client = new loaded.roz.v1.AgentService(address, credentials, options.channelOptions) as unknown as AgentServiceClient;
  const identity = (b: Buffer): Buffer => b;
  return {
    client,
    openSession: (metadata) => wrapDuplex(client.StreamSession(metadata ?? new grpc.Metadata())),
    openRawBidi: (path) => wrapDuplex(client.makeBidiStreamRequest(path, identity, identity)),
    close: () => client.close(),
  };
}

/** Request builders, so tests read like the protocol. */
export const req = {
  ping: (): WireRequest => ({ ping: {} }),
  start: (start: Record<string, unknown> = {}): WireRequest => ({ start: { environment_id: "", ...start } }),
  userMessage: (content: string, extra: Record<string, unknown> = {}): WireRequest => ({ user_message: { content, ...extra } }),
  toolResult: (toolCallId: string, result = "ok"): WireRequest => ({ tool_result: { tool_call_id: toolCallId, success: true, result } }),
  registerTools: (tools: Record<string, unknown>[] = []): WireRequest => ({ register_tools: { tools } }),
  cancelSession: (reason = "test"): WireRequest => ({ cancel_session: { reason } }),
};
