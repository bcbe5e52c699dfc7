import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

export interface OnePortOptions {
  tls?: { cert: Buffer; key: Buffer };
  maxConcurrentStreams: number;
  /** Interval of HTTP/2 PINGs on each connection; 0 disables them. */
  pingIntervalMs: number;
}

/**
 * One listening socket that serves HTTP/2 and HTTP/1.1 with the same handler.
 * Cleartext: the first bytes of each connection are compared with the HTTP/2 preface
 * (h2c prior knowledge) and the socket is handed to the matching inner server.
 * TLS: ALPN chooses `h2` or `http/1.1`.
 *
 * It tracks every connection so that `drain()` can GOAWAY HTTP/2 sessions, close idle
 * HTTP/1.1 sockets, and destroy whatever is left when the grace period ends.
 */
export class OnePortServer {
  readonly server: net.Server;
  readonly #h2Sessions = new Set<http2.ServerHttp2Session>();
  readonly #h1Sockets = new Set<Socket>();
  /** Accepted sockets still being sniffed (a client that connects and sends nothing stays here). */
  readonly #sniffing = new Set<Socket>();
  readonly #h1: http.Server;
  #closing = false;

  constructor(handler: Handler, options: OnePortOptions) {
    const h2Settings: http2.Settings = { maxConcurrentStreams: options.maxConcurrentStreams };
    this.#h1 = http.createServer(handler as http.RequestListener);
    configureHttp1(this.#h1);
    this.#h1.on("connection", (socket: Socket) => this.#trackHttp1(socket));

    if (options.tls) {
      const secure = http2.createSecureServer(
        { cert: options.tls.cert, key: options.tls.key, allowHTTP1: true, settings: h2Settings },
        handler as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
      );
      configureHttp1(secure as unknown as http.Server);
      secure.on("session", (session) => this.#trackSession(session, options.pingIntervalMs));
      secure.on("secureConnection", (socket: TLSSocket) => {
        if (socket.alpnProtocol !== "h2") this.#trackHttp1(socket);
      });
      this.server = secure;
      return;
    }

    const h2 = http2.createServer({ settings: h2Settings }, handler as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void);
    h2.on("session", (session) => this.#trackSession(session, options.pingIntervalMs));
    // The inner HTTP/2 server's session timeout only sends GOAWAY; streams survive.
    h2.setTimeout(0);
    const outer = net.createServer({ pauseOnConnect: true }, (socket) => this.#sniff(socket, h2));
    // Node starts HTTP/1.1 connection tracking (header timeouts) on 'listening'.
    outer.on("listening", () => this.#h1.emit("listening"));
    outer.on("close", () => this.#h1.emit("close"));
    this.server = outer;
  }

  /** Hands the socket to HTTP/2 when it starts with the preface, else to HTTP/1.1. */
  #sniff(socket: Socket, h2: http2.Http2Server): void {
    // A reset during sniffing must not crash the process.
    socket.on("error", () => socket.destroy());
    this.#sniffing.add(socket);
    socket.once("close", () => this.#sniffing.delete(socket));
    let seen = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, PREFACE.length);
      const isH2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (isH2 && seen.length < PREFACE.length) return; // preface split across segments
      socket.off("data", onData);
      this.#sniffing.delete(socket);
      socket.pause();
      socket.unshift(seen);
      if (this.#closing) {
        socket.destroy();
        return;
      }
      if (isH2) {
        // The HTTP/2 session reads the socket natively and takes the unshifted bytes with
        // `socket.read()` on the next tick. Resuming here would let this 'data' emission's
        // flow loop drain (and drop) them first: "bad client magic" on Node 24.
        h2.emit("connection", socket);
        return;
      }
      this.#h1.emit("connection", socket);
      socket.resume();
    };
    socket.on("data", onData);
    socket.resume();
  }

  #trackSession(session: http2.ServerHttp2Session, pingIntervalMs: number): void {
    this.#h2Sessions.add(session);
    if (this.#closing) session.close();
    let timer: NodeJS.Timeout | undefined;
    if (pingIntervalMs > 0) {
      timer = setInterval(() => {
        // A peer that does not answer a PING within one interval is gone.
        const sent = session.ping((err) => {
          if (err && !session.destroyed) session.destroy();
        });
        if (!sent && !session.destroyed && !session.closed) session.destroy();
      }, pingIntervalMs);
      timer.unref();
    }
    session.on("error", () => {});
    session.once("close", () => {
      if (timer) clearInterval(timer);
      this.#h2Sessions.delete(session);
    });
  }

  #trackHttp1(socket: Socket): void {
    this.#h1Sockets.add(socket);
    socket.once("close", () => this.#h1Sockets.delete(socket));
  }

  /** Open HTTP/2 sessions plus HTTP/1.1 sockets. */
  get connectionCount(): number {
    return this.#h2Sessions.size + this.#h1Sockets.size + this.#sniffing.size;
  }

  /**
   * Stops accepting, asks every connection to finish (GOAWAY / close when idle), and
   * resolves once all are gone or `graceMs` has passed — then `onDeadline` runs (to end
   * long streams cleanly) and, after `flushMs`, remaining sockets are destroyed.
   */
  async drain(graceMs: number, onDeadline: () => void, flushMs = 500): Promise<void> {
    this.#closing = true;
    this.server.close();
    for (const session of this.#h2Sessions) session.close();
    this.#h1.closeIdleConnections();
    if (await this.#waitIdle(graceMs)) return;
    onDeadline();
    await this.#waitIdle(flushMs);
    for (const session of this.#h2Sessions) session.destroy();
    for (const socket of this.#h1Sockets) socket.destroy();
    for (const socket of this.#sniffing) socket.destroy();
  }

  /**
   * Polls until no connection is left (true) or `withinMs` has passed (false). The timers
   * are not unref'd on purpose: a shutdown in progress must keep the process alive, or
   * Node exits mid-`close()` once only these timers are left (and the store is never closed).
   */
  async #waitIdle(withinMs: number): Promise<boolean> {
    const until = Date.now() + withinMs;
    while (this.connectionCount > 0) {
      const left = until - Date.now();
      if (left <= 0) return false;
      this.#h1.closeIdleConnections();
      await delay(Math.min(25, left));
    }
    return true;
  }
}

function configureHttp1(server: http.Server): void {
  // Long-lived streams must never be cut by server timeouts; headers still must arrive.
  server.requestTimeout = 0;
  server.headersTimeout = 30_000;
  server.keepAliveTimeout = 65_000;
  server.setTimeout(0);
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
