import type * as http from "node:http";
import type * as http2 from "node:http2";
import type { Socket } from "node:net";

/**
 * Every open connection of the port, by what it speaks so far, so that `drain` can GOAWAY
 * HTTP/2 sessions, close idle HTTP/1.1 sockets, and destroy whatever is left when the grace
 * period ends.
 */
export class OpenConnections {
  readonly #h2Sessions = new Set<http2.ServerHttp2Session>();
  readonly #h1Sockets = new Set<Socket>();
  /** Accepted sockets still being sniffed (a client that connects and sends nothing stays here). */
  readonly #sniffing = new Set<Socket>();
  readonly #h1: http.Server;
  #closing = false;

  /** `h1` is the server whose idle keep-alive sockets `drain` closes. */
  constructor(h1: http.Server) {
    this.#h1 = h1;
  }

  /** True once `drain` began: new connections are turned away. */
  get closing(): boolean {
    return this.#closing;
  }

  /** Open HTTP/2 sessions, HTTP/1.1 sockets and sockets still being sniffed. */
  get count(): number {
    return this.#h2Sessions.size + this.#h1Sockets.size + this.#sniffing.size;
  }

  /** A cleartext socket whose first bytes are awaited. */
  sniffing(socket: Socket): void {
    this.#track(this.#sniffing, socket);
  }

  /** The socket was handed to HTTP/2 or HTTP/1.1 (which track it from now on). */
  sniffed(socket: Socket): void {
    this.#sniffing.delete(socket);
  }

  http1(socket: Socket): void {
    this.#track(this.#h1Sockets, socket);
  }

  /** A new HTTP/2 session; one that starts while draining is asked to finish at once. */
  http2(session: http2.ServerHttp2Session): void {
    this.#track(this.#h2Sessions, session);
    if (this.#closing) session.close();
  }

  #track<T extends Socket | http2.ServerHttp2Session>(set: Set<T>, connection: T): void {
    set.add(connection);
    connection.once("close", () => set.delete(connection));
  }

  /**
   * Asks every connection to finish (GOAWAY / close when idle), and resolves once all are
   * gone or `graceMs` has passed — then `onDeadline` runs (to end long streams cleanly) and,
   * after `flushMs`, remaining sockets are destroyed. The caller stops accepting first.
   */
  async drain(graceMs: number, onDeadline: () => void, flushMs: number): Promise<void> {
    this.#closing = true;
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
    while (this.count > 0) {
      const left = until - Date.now();
      if (left <= 0) return false;
      this.#h1.closeIdleConnections();
      await delay(Math.min(25, left));
    }
    return true;
  }
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
