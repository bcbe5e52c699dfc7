import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SessionRequestSchema, SessionResponse, StartSessionSchema } from "./gen/roz/v1/agent_pb.js";
import type { Connection } from "./platform.ts";
import { AsyncQueue } from "./queue.ts";
import { ping, type Request } from "./requests.ts";

/** What a link opens: a new session, or an existing one after a seq. */
export type Target = { start: MessageInitShape<typeof StartSessionSchema> } | { sessionId: string; afterSeq: number };

/**
 * One call carrying a session: its responses in order, and a way to send it requests. A link
 * never retries; the session's re-attach loop opens a new one when this one breaks.
 */
export interface Link {
  readonly responses: AsyncIterable<SessionResponse>;
  /** Resolves once the request is on its way (bidi: written) or accepted (pair: SendToSession answered). */
  send(request: Request): Promise<void>;
  /** Asks for a `pong` that comes after everything replayed so far. */
  probe(): void;
  /** Ends the call without a half-close: the session stays (detached when no other stream is attached). */
  abort(): void;
}

/** gRPC (or Connect over HTTP/2) bidi `StreamSession`: `start` or `resume` first, then every request on the same stream. */
export function bidiLink(connection: Connection, target: Target): Link {
  const requests = new AsyncQueue<MessageInitShape<typeof SessionRequestSchema>>();
  const abort = new AbortController();
  requests.push({
    request:
      "start" in target
        ? { case: "start", value: target.start }
        : { case: "resume", value: { sessionId: target.sessionId, afterSeq: BigInt(target.afterSeq) } },
  });
  return {
    responses: connection.agent.streamSession(requests, { signal: abort.signal }),
    send: async (request) => requests.push({ request }),
    probe: () => requests.push({ request: ping }),
    abort: () => {
      abort.abort();
      requests.end();
    },
  };
}

/**
 * The pair browsers use: `AttachSession` is the downlink, each request one `SendToSession`
 * call (sent one after another, so they arrive in order). `sessionId` is read when a request
 * goes out: a started session has one once `session_started` arrived.
 */
export function pairLink(connection: Connection, target: Target, sessionId: () => string): Link {
  const abort = new AbortController();
  let chain: Promise<unknown> = Promise.resolve();
  const send = (request: Request): Promise<void> => {
    const sent = chain.then(() => connection.agent.sendToSession({ sessionId: sessionId(), request: { request } }, { signal: abort.signal }));
    chain = sent.catch(() => undefined);
    return sent.then(() => undefined);
  };
  const attach =
    "start" in target
      ? { target: { case: "start" as const, value: target.start } }
      : { target: { case: "sessionId" as const, value: target.sessionId }, afterSeq: BigInt(target.afterSeq) };
  return {
    responses: connection.agent.attachSession(attach, { signal: abort.signal }),
    send,
    probe: () => void send(ping).catch(() => undefined),
    abort: () => abort.abort(),
  };
}
