import type { MessageInitShape } from "@bufbuild/protobuf";
import { ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { AgentService, type SessionRequestSchema, type SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { AsyncQueue } from "../../src/session/index.ts";
import { MessageQueue, StreamEndedError } from "../support/grpc-js-client.ts";

export type SessionRequestInit = MessageInitShape<typeof SessionRequestSchema>;

/** A StreamSession opened with a Connect-ES client, its responses read as a queue. */
export interface ConnectSession {
  send(request: SessionRequestInit): void;
  /** Half-closes the request stream. */
  end(): void;
  /** Aborts the call. */
  abort(): void;
  next(timeoutMs?: number): Promise<SessionResponse>;
  /** Resolves when the call ended: undefined for OK, else the error. Never rejects. */
  readonly done: Promise<ConnectError | undefined>;
}

/** Opens a bidi StreamSession over `transport` (Connect or gRPC protocol, HTTP/2). */
export function openConnectSession(transport: Transport): ConnectSession {
  const client = createClient(AgentService, transport);
  const requests = new AsyncQueue<SessionRequestInit>();
  const abort = new AbortController();
  let failure: ConnectError | undefined;
  const responses = new MessageQueue<SessionResponse>(() => new StreamEndedError(undefined));
  const done = (async () => {
    try {
      for await (const response of client.streamSession(requests, { signal: abort.signal })) responses.push(response);
      return undefined;
    } catch (err) {
      failure = ConnectError.from(err);
      return failure;
    } finally {
      responses.end();
    }
  })();
  return {
    send: (request) => requests.push(request),
    end: () => requests.end(),
    abort: () => abort.abort(),
    next: (timeoutMs) => responses.next(timeoutMs),
    done,
  };
}
