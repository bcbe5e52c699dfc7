import type * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { AddressCap } from "./admission.ts";
import { DispatchedStreams } from "./dispatched-streams.ts";
import { configureHttp1, createHttp1Server, http1Handler } from "./http1-settings.ts";
import { watchHttp2Session } from "./http2-session.ts";
import { OpenConnections } from "./open-connections.ts";
import type { Handler, OnePortOptions } from "./options.ts";
import { sniffPreface } from "./preface-sniff.ts";
import { nghttp2ResetLimits, RapidResetGuard } from "./rapid-reset.ts";
import { dispatchStreams } from "./stream-dispatch.ts";

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
  readonly #connections: OpenConnections;
  readonly #rapidReset: RapidResetGuard;

  constructor(handler: Handler, options: OnePortOptions) {
    const dispatched = new DispatchedStreams();
    this.#rapidReset = new RapidResetGuard(dispatched, options.maxStreamsPerSecond ?? 0, options.maxResetsPerSecond ?? 0);
    const addressCap = new AddressCap(options.maxConnectionsPerAddress);
    const h1Handler = http1Handler(handler, options);
    const h2Handler = dispatchStreams(handler, h1Handler, options.answerEarly, dispatched);
    const h2Options = { settings: { maxConcurrentStreams: options.maxConcurrentStreams }, ...nghttp2ResetLimits(options.maxResetsPerSecond ?? 0) };
    const h1 = createHttp1Server(h1Handler, options.headersTimeoutMs);
    const connections = new OpenConnections(h1);
    this.#connections = connections;
    h1.on("connection", (socket: Socket) => connections.http1(socket));
    const onSession = (session: http2.ServerHttp2Session): void => {
      connections.http2(session);
      watchHttp2Session(session, options);
      this.#rapidReset.watch(session);
    };

    if (options.tls) {
      const secure = http2.createSecureServer(
        { cert: options.tls.cert, key: options.tls.key, allowHTTP1: true, handshakeTimeout: options.handshakeTimeoutMs, ...h2Options },
        h2Handler,
      );
      configureHttp1(secure as unknown as http.Server, options.headersTimeoutMs);
      // Runs before TLS: a connection over the per-address cap costs no handshake.
      secure.prependListener("connection", (socket: Socket) => {
        if (!addressCap.admit(socket)) socket.destroy();
      });
      secure.on("session", onSession);
      secure.on("secureConnection", (socket: TLSSocket) => {
        if (socket.alpnProtocol !== "h2") connections.http1(socket);
      });
      secure.on("close", () => this.#rapidReset.close());
      this.server = secure;
      return;
    }

    const h2 = http2.createServer(h2Options, h2Handler);
    h2.on("session", onSession);
    // The inner HTTP/2 server's session timeout only sends GOAWAY; streams survive.
    h2.setTimeout(0);
    const handOn = (to: net.Server | http.Server) => (socket: Socket) => {
      connections.sniffed(socket);
      to.emit("connection", socket);
    };
    const outcome = { http2: handOn(h2), http1: handOn(h1) };
    const outer = net.createServer({ pauseOnConnect: true }, (socket) => {
      if (!addressCap.admit(socket)) {
        socket.destroy();
        return;
      }
      connections.sniffing(socket);
      sniffPreface(socket, options.handshakeTimeoutMs, outcome, () => connections.closing);
    });
    // Node starts HTTP/1.1 connection tracking (header timeouts) on 'listening'.
    outer.on("listening", () => h1.emit("listening"));
    outer.on("close", () => {
      h1.emit("close");
      this.#rapidReset.close();
    });
    this.server = outer;
  }

  /** Open HTTP/2 sessions, HTTP/1.1 sockets and sockets still being sniffed. */
  get connectionCount(): number {
    return this.#connections.count;
  }

  /**
   * Stops accepting, asks every connection to finish (GOAWAY / close when idle), and
   * resolves once all are gone or `graceMs` has passed — then `onDeadline` runs (to end
   * long streams cleanly) and, after `flushMs`, remaining sockets are destroyed.
   */
  async drain(graceMs: number, onDeadline: () => void, flushMs = 500): Promise<void> {
    this.server.close();
    await this.#connections.drain(graceMs, onDeadline, flushMs);
  }
}
