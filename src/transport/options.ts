import type * as http from "node:http";
import type * as http2 from "node:http2";

/** The request handler both inner servers call (Fastify's, behind its `serverFactory`). */
export type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

/** A response written as it is, with no handler. */
export interface EarlyAnswer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
  trailers: Record<string, string>;
}

export interface OnePortOptions {
  tls?: { cert: Buffer; key: Buffer };
  maxConcurrentStreams: number;
  /** Interval of HTTP/2 PINGs on each connection; 0 disables them. */
  pingIntervalMs: number;
  /**
   * How long a new connection may take to show what it is (cleartext: its first bytes or
   * the whole HTTP/2 preface; TLS: the handshake) and, for HTTP/2, to send its SETTINGS.
   */
  handshakeTimeoutMs: number;
  /** How long HTTP/1.1 request headers may take to arrive, and an HTTP/2 connection's first stream. */
  headersTimeoutMs: number;
  /** Open connections allowed from one remote address; more are closed at once (0 = no cap). */
  maxConnectionsPerAddress: number;
  /** HTTP/2 streams a connection may open within any one second (the rapid-reset guard); beyond it the connection is closed (0 = no cap). */
  maxStreamsPerSecond?: number;
  /** HTTP/2 streams a connection may reset itself within any one second; beyond it the connection is closed (0 = no cap). */
  maxResetsPerSecond?: number;
  /**
   * HTTP/1.1: how much of a body left unread when its response was sent (a refused or
   * oversized request) is read on, so that the connection can serve its next request; beyond
   * it, or after `headersTimeoutMs`, the connection is closed.
   */
  maxDrainBytes: number;
  /**
   * A complete answer for a new HTTP/2 stream, known from its headers alone (a refusal), which
   * is then written without dispatching the stream; undefined dispatches it. Asked when the
   * stream's turn comes.
   */
  answerEarly?: (headers: http2.IncomingHttpHeaders) => EarlyAnswer | undefined;
}
