import * as diagnostics from "node:diagnostics_channel";
import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { answerClientError, errorBody } from "./rest-errors.ts";

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

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
  /** How long HTTP/1.1 request headers may take to arrive. */
  headersTimeoutMs: number;
  /** Open connections allowed from one remote address; more are closed at once (0 = no cap). */
  maxConnectionsPerAddress: number;
  /** HTTP/2 streams a connection may open per second (the rapid-reset guard); beyond it the connection is closed (0 = no cap). */
  maxStreamsPerSecond?: number;
  /** HTTP/2 streams a connection may reset itself per second; beyond it the connection is closed (0 = no cap). */
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

/** A response written as it is, with no handler. */
export interface EarlyAnswer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
  trailers: Record<string, string>;
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
  readonly #options: OnePortOptions;
  /** Open connections per remote address. */
  readonly #perAddress = new Map<string, number>();
  readonly #streamRates = new StreamRateGuard();
  readonly #dispatched = new DispatchedStreams();
  #closing = false;

  constructor(handler: Handler, options: OnePortOptions) {
    this.#options = options;
    const h1Handler = requireHost(drainWhenAnswered(handler, options));
    const h2Handler = guardStreams(handler, h1Handler, options.answerEarly, this.#dispatched);
    const h2Settings: http2.Settings = { maxConcurrentStreams: options.maxConcurrentStreams };
    // nghttp2's own rapid-reset guard, behind ours: a burst of client resets four times our per-second
    // cap ends the session before any more streams reach JavaScript (Node's default burst is
    // 1000); ours answers first, with ENHANCE_YOUR_CALM. With our guard off (0), so is nghttp2's.
    const resetRate = options.maxResetsPerSecond ?? 0;
    const resetLimits =
      resetRate > 0 ? { streamResetBurst: 4 * resetRate, streamResetRate: resetRate } : { streamResetBurst: 2 ** 31 - 1, streamResetRate: 2 ** 31 - 1 };
    this.#h1 = http.createServer(
      // Node checks header timeouts on this interval: keep it well below the timeout itself.
      // The Host check is ours (`requireHost`): Node's own 400 has no body.
      { connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(options.headersTimeoutMs / 4))), requireHostHeader: false },
      h1Handler as http.RequestListener,
    );
    configureHttp1(this.#h1, options.headersTimeoutMs);
    this.#h1.on("connection", (socket: Socket) => this.#trackHttp1(socket));

    if (options.tls) {
      const secure = http2.createSecureServer(
        { cert: options.tls.cert, key: options.tls.key, allowHTTP1: true, settings: h2Settings, handshakeTimeout: options.handshakeTimeoutMs, ...resetLimits },
        h2Handler,
      );
      configureHttp1(secure as unknown as http.Server, options.headersTimeoutMs);
      // Runs before TLS: a connection over the per-address cap costs no handshake.
      secure.prependListener("connection", (socket: Socket) => {
        if (!this.#admit(socket)) socket.destroy();
      });
      secure.on("session", (session) => this.#trackSession(session, options.pingIntervalMs));
      secure.on("secureConnection", (socket: TLSSocket) => {
        if (socket.alpnProtocol !== "h2") this.#trackHttp1(socket);
      });
      this.server = secure;
      secure.on("close", () => this.#streamRates.close());
      return;
    }

    const h2 = http2.createServer({ settings: h2Settings, ...resetLimits }, h2Handler);
    h2.on("session", (session) => this.#trackSession(session, options.pingIntervalMs));
    // The inner HTTP/2 server's session timeout only sends GOAWAY; streams survive.
    h2.setTimeout(0);
    const outer = net.createServer({ pauseOnConnect: true }, (socket) => {
      if (this.#admit(socket)) this.#sniff(socket, h2);
      else socket.destroy();
    });
    // Node starts HTTP/1.1 connection tracking (header timeouts) on 'listening'.
    outer.on("listening", () => this.#h1.emit("listening"));
    outer.on("close", () => {
      this.#h1.emit("close");
      this.#streamRates.close();
    });
    this.server = outer;
  }

  /** Counts the connection against its address's cap; false when it is over the cap. */
  #admit(socket: Socket): boolean {
    const cap = this.#options.maxConnectionsPerAddress;
    if (cap <= 0) return true;
    const address = socket.remoteAddress ?? "";
    const open = this.#perAddress.get(address) ?? 0;
    if (open >= cap) return false;
    this.#perAddress.set(address, open + 1);
    socket.once("close", () => {
      const left = (this.#perAddress.get(address) ?? 1) - 1;
      if (left <= 0) this.#perAddress.delete(address);
      else this.#perAddress.set(address, left);
    });
    return true;
  }

  /** Hands the socket to HTTP/2 when it starts with the preface, else to HTTP/1.1. */
  #sniff(socket: Socket, h2: http2.Http2Server): void {
    // A reset during sniffing must not crash the process.
    socket.on("error", () => socket.destroy());
    // Silent sockets and half prefaces are closed instead of held forever.
    const timer = setTimeout(() => socket.destroy(), this.#options.handshakeTimeoutMs);
    socket.once("close", () => clearTimeout(timer));
    this.#sniffing.add(socket);
    socket.once("close", () => this.#sniffing.delete(socket));
    let seen = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, PREFACE.length);
      const isH2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (isH2 && seen.length < PREFACE.length) return; // preface split across segments
      clearTimeout(timer);
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
    // A client that sent the preface but never its SETTINGS is not speaking HTTP/2.
    const settingsTimer = setTimeout(() => session.destroy(), this.#options.handshakeTimeoutMs);
    session.once("remoteSettings", () => clearTimeout(settingsTimer));
    this.#limitStreamRate(session);
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
      clearTimeout(settingsTimer);
      if (timer) clearInterval(timer);
      this.#h2Sessions.delete(session);
    });
  }

  /**
   * The HTTP/2 rapid-reset guard: a connection that opens more than `maxStreamsPerSecond`
   * streams, or resets more than `maxResetsPerSecond` of them itself, within a second
   * (opening and resetting costs the client nothing, dispatching costs us) gets
   * GOAWAY(ENHANCE_YOUR_CALM) and is closed (over the opening cap with many streams in
   * flight, after `#calmGently`). See `StreamRateGuard` for why it counts through diagnostics
   * channels.
   */
  #limitStreamRate(session: http2.ServerHttp2Session): void {
    const opened = perSecondCounter(this.#options.maxStreamsPerSecond ?? 0);
    const reset = perSecondCounter(this.#options.maxResetsPerSecond ?? 0);
    this.#streamRates.watch(session, {
      opened: () => {
        if (opened()) this.#calmGently(session);
      },
      reset: () => {
        // A calming connection's streams are cancelled by us, not reset by the client.
        if (reset() && !this.#dispatched.calming(session)) calm(session);
      },
    });
  }

  /**
   * The opening cap's answer. Closing the connection at once ends every stream it has in one
   * turn of the loop, and connect unwinds each call then: some 0.4 ms a stream, 40 ms for the
   * 100 streams a flood keeps waiting for `start`. (A rapid reset has few streams in flight:
   * they are reset before they are dispatched.) With more than a turn's worth in flight, the
   * connection's new streams are dropped at once while those in flight are cancelled
   * (RST_STREAM(CANCEL)) `STREAMS_CANCELLED_PER_TURN` per turn; then GOAWAY(ENHANCE_YOUR_CALM)
   * and the connection is closed. GOAWAY comes last because a client closes its side when it
   * gets one, which would end the rest in one turn again.
   */
  #calmGently(session: http2.ServerHttp2Session): void {
    if (session.destroyed || this.#dispatched.calming(session)) return;
    const inFlight = this.#dispatched.of(session);
    if (inFlight.length <= STREAMS_CANCELLED_PER_TURN) return calm(session);
    this.#dispatched.calm(session);
    const cancelSome = (): void => {
      if (session.destroyed) return;
      let cancelled = 0;
      while (cancelled < STREAMS_CANCELLED_PER_TURN && inFlight.length > 0) {
        const stream = inFlight.pop() as http2.ServerHttp2Stream;
        if (stream.closed || stream.destroyed) continue;
        stream.close(http2.constants.NGHTTP2_CANCEL);
        cancelled++;
      }
      // GOAWAY a turn after the last cancellation, so that a client reads those first.
      if (cancelled > 0) setImmediate(cancelSome);
      else calm(session);
    };
    setImmediate(cancelSome);
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

/**
 * New streams dispatched in one turn of the event loop, over all connections; the rest wait.
 * Each costs some 65 KB of short-lived objects (connect's pipeline, Fastify's request): fewer
 * per turn keep the loop's blocks shorter in a flood. 20,000 streams without `start`, longest
 * block: bench `abuse` 47–65 ms at 8 against 65–84 ms at 32; server alone, six runs each
 * alternated, 35–72 ms (median 42) at 4 against 36–133 ms (median 55) at 8. A burst of
 * streams on one connection is dispatched over more turns in exchange.
 */
const STREAMS_PER_TURN = 4;

/**
 * Early answers (`answerEarly`) written in a turn for each dispatch it could hold instead.
 * An answer is a few header blocks and one small DATA frame; a dispatch builds Fastify's
 * request and connect's handler.
 */
const ANSWERS_PER_DISPATCH = 16;

/** Streams in flight a gentle calm (`#calmGently`) cancels per turn of the loop. */
const STREAMS_CANCELLED_PER_TURN = 8;

/** The dispatched streams of each connection that are still open, and the connections being calmed. */
class DispatchedStreams {
  readonly #open = new WeakMap<http2.Http2Session, Set<http2.ServerHttp2Stream>>();
  readonly #calming = new WeakSet<http2.Http2Session>();

  add(stream: http2.ServerHttp2Stream): void {
    const session = stream.session as http2.Http2Session;
    let open = this.#open.get(session);
    if (open === undefined) {
      open = new Set();
      this.#open.set(session, open);
    }
    open.add(stream);
    const streams = open;
    stream.once("close", () => streams.delete(stream));
  }

  of(session: http2.Http2Session): http2.ServerHttp2Stream[] {
    return [...(this.#open.get(session) ?? [])];
  }

  /** From now on the connection's new streams are dropped. */
  calm(session: http2.Http2Session): void {
    this.#calming.add(session);
  }

  calming(session: http2.Http2Session): boolean {
    return this.#calming.has(session);
  }
}

type Exchange = [http2.Http2ServerRequest, http2.Http2ServerResponse];

/**
 * The HTTP/2 handler, guarding the event loop against stream floods (rapid reset, or many
 * streams that each cost a little):
 * - requests of a session that is already closed, or being calmed, are dropped unanswered:
 *   nghttp2 goes on reading a socket buffer after the rapid-reset guard destroyed its session,
 *   and every stream still in it (thousands in a flood) would be routed and dispatched for nothing;
 * - a new stream is dispatched no sooner than after the loop's next poll for I/O. A client
 *   that cancels a stream just after opening it sends its RST_STREAM in a later write than
 *   the HEADERS (Node's client, for one, gives a stream its id only as the HEADERS leave), so
 *   it is read by then and the stream is dropped instead of dispatched: in a rapid reset of
 *   126,000 streams, 125–213 were dispatched instead of 3,638, and the loop's longest block
 *   fell from 37–76 ms to 36–54 ms (server alone). Every stream waits that one turn of the loop;
 * - at most `STREAMS_PER_TURN` new streams are dispatched per turn; the others wait in a
 *   queue per connection and are taken in turns, one from each connection at a time, so a
 *   flood on one connection delays only itself. Streams reset while they wait are dropped too;
 * - a stream `answerEarly` answers from its headers is written here instead of dispatched,
 *   `ANSWERS_PER_DISPATCH` of them in the place of one dispatch.
 */
function guardStreams(
  handler: Handler,
  h1Handler: Handler,
  answerEarly: OnePortOptions["answerEarly"],
  dispatched: DispatchedStreams,
): (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void {
  const waiting = new Map<http2.Http2Session, Exchange[]>();
  let nextTurnScheduled = false;
  const live = (req: http2.Http2ServerRequest): boolean => {
    const session = req.stream.session;
    if (session !== undefined && !session.destroyed && !session.closed && !dispatched.calming(session) && !req.stream.destroyed && !req.stream.closed) {
      return true;
    }
    req.stream.destroy();
    return false;
  };
  // A failing `answerEarly` must not take the process down: the stream is dispatched, and the full path answers it.
  const earlyAnswerOf = (req: http2.Http2ServerRequest): EarlyAnswer | undefined => {
    try {
      return answerEarly?.(req.headers);
    } catch {
      return undefined;
    }
  };
  const nextTurn = (): void => {
    nextTurnScheduled = false;
    // In answers: a dispatch counts for ANSWERS_PER_DISPATCH.
    let spent = 0;
    while (waiting.size > 0 && spent < STREAMS_PER_TURN * ANSWERS_PER_DISPATCH) {
      // The connection longest without a turn gives one stream and goes to the back.
      const [session, queue] = waiting.entries().next().value as [http2.Http2Session, Exchange[]];
      const exchange = queue.shift();
      waiting.delete(session);
      if (queue.length > 0) waiting.set(session, queue);
      if (exchange === undefined || !live(exchange[0])) continue;
      const [req, res] = exchange;
      const answer = earlyAnswerOf(req);
      if (answer) {
        res.writeHead(answer.status, answer.headers);
        res.addTrailers(answer.trailers);
        res.end(answer.body);
        spent++;
        continue;
      }
      spent += ANSWERS_PER_DISPATCH;
      dispatched.add(req.stream);
      void handler(req, res);
    }
    if (waiting.size > 0) scheduleNextTurn();
  };
  const scheduleNextTurn = (): void => {
    if (nextTurnScheduled) return;
    nextTurnScheduled = true;
    setImmediate(nextTurn);
  };
  // Streams that arrived in this turn's poll: queued in this turn's check phase, from where
  // `nextTurn` (a `setImmediate`) runs only after the next poll.
  let arriving: Exchange[] = [];
  const admit = (): void => {
    const arrived = arriving;
    arriving = [];
    for (const exchange of arrived) {
      const session = exchange[0].stream.session as http2.Http2Session;
      const queue = waiting.get(session);
      if (queue) queue.push(exchange);
      else waiting.set(session, [exchange]);
    }
    scheduleNextTurn();
  };
  return (req, res) => {
    // HTTP/1.1 inside TLS (ALPN) reaches this handler too.
    if (req.httpVersionMajor < 2) return h1Handler(req, res);
    if (!live(req)) return;
    resetWhenAnswered(req);
    if (arriving.push([req, res]) === 1) setImmediate(admit);
  };
}

/**
 * A response that is complete while the client is still sending (an oversized or refused
 * request, a call that ended first) makes the rest of the request useless: RST_STREAM(NO_ERROR)
 * after it tells the client to stop (RFC 9113 §8.1), instead of leaving its upload stuck in
 * flow control and the stream open. Node's compatibility layer sends every response's trailers
 * (gRPC's status among them) in its own 'wantTrailers' listener, before this one: the reset
 * goes out after them. A request that is read to its end needs nothing.
 */
function resetWhenAnswered(req: http2.Http2ServerRequest): void {
  const stream = req.stream;
  stream.once("wantTrailers", () => {
    setImmediate(() => {
      if (!stream.destroyed && !stream.closed && !req.complete) stream.close(http2.constants.NGHTTP2_NO_ERROR);
    });
  });
}

/**
 * The HTTP/1.1 counterpart of `resetWhenAnswered`: a response sent while part of its request's
 * body is unread (connect stops reading a body over its limit) would leave the connection
 * stuck, the next request behind bytes nobody reads. The rest is read and dropped, up to
 * `maxDrainBytes` and within `headersTimeoutMs`; beyond, or when the request was already let go
 * (destroyed), the connection is closed after the response.
 */
function drainWhenAnswered(handler: Handler, options: Pick<OnePortOptions, "maxDrainBytes" | "headersTimeoutMs">): Handler {
  return (req, res) => {
    const socket = "socket" in req ? req.socket : null;
    res.once("finish", () => {
      if (req.complete || socket === null || socket.destroyed) return;
      const timer = setTimeout(() => socket.destroy(), options.headersTimeoutMs);
      timer.unref();
      socket.once("close", () => clearTimeout(timer));
      // A reader that gave up destroyed the request: nothing can read the rest, the connection ends after the response.
      if (req.destroyed) {
        socket.end();
        return;
      }
      let drained = 0;
      req.on("data", (chunk: Buffer) => {
        drained += chunk.byteLength;
        if (drained > options.maxDrainBytes) socket.destroy();
      });
      req.once("end", () => clearTimeout(timer));
      req.resume();
    });
    handler(req, res);
  };
}

/** GOAWAY(ENHANCE_YOUR_CALM), then the connection is closed. */
function calm(session: http2.ServerHttp2Session): void {
  if (session.destroyed) return;
  session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
  session.destroy();
}

interface StreamCounters {
  /** A stream was opened by the client. */
  opened(): void;
  /** A stream was closed before its response was complete: the client reset it. */
  reset(): void;
}

/**
 * Counts the streams of watched sessions as nghttp2 reads them. Node announces a new stream
 * with the session's 'stream' event only after the whole socket read was parsed, and a read
 * of 64 KB holds a thousand opened-and-reset streams: counted there, a connection over its
 * cap was closed after all of them were built (90 ms of work in one block on two cores, and
 * 10 MB alive for the garbage collector to copy). Node's diagnostics channels
 * `http2.server.stream.created` and `http2.server.stream.close` fire as each stream's frame
 * is parsed, and a session closed there reads no further frames.
 */
class StreamRateGuard {
  readonly #sessions = new WeakMap<http2.Http2Session, StreamCounters>();
  readonly #onCreated = (message: unknown): void => {
    const stream = (message as { stream: http2.ServerHttp2Stream }).stream;
    this.#sessions.get(stream.session as http2.Http2Session)?.opened();
  };
  readonly #onClose = (message: unknown): void => {
    const stream = (message as { stream: http2.ServerHttp2Stream }).stream;
    if (stream.aborted) this.#sessions.get(stream.session as http2.Http2Session)?.reset();
  };
  #subscribed = false;

  watch(session: http2.Http2Session, counters: StreamCounters): void {
    if (!this.#subscribed) {
      diagnostics.subscribe("http2.server.stream.created", this.#onCreated);
      diagnostics.subscribe("http2.server.stream.close", this.#onClose);
      this.#subscribed = true;
    }
    this.#sessions.set(session, counters);
  }

  close(): void {
    if (!this.#subscribed) return;
    diagnostics.unsubscribe("http2.server.stream.created", this.#onCreated);
    diagnostics.unsubscribe("http2.server.stream.close", this.#onClose);
    this.#subscribed = false;
  }
}

/** A counter of events in the current one-second window: true once it exceeds `cap` (0 = never). */
function perSecondCounter(cap: number): () => boolean {
  let windowStart = Date.now();
  let count = 0;
  return () => {
    if (cap <= 0) return false;
    const now = Date.now();
    if (now - windowStart >= 1000) {
      windowStart = now;
      count = 0;
    }
    return ++count > cap;
  };
}

/**
 * An HTTP/1.1 request without a Host header is a 400 (RFC 9112 §3.2), in the JSON error shape
 * of every other answer; the connection then closes.
 */
function requireHost(handler: Handler): Handler {
  return (req, res) => {
    if (req.httpVersionMajor !== 1 || req.httpVersionMinor < 1 || req.headers.host !== undefined) return handler(req, res);
    const body = JSON.stringify(errorBody("invalid_argument", "an HTTP/1.1 request needs a Host header"));
    const reply = res as http.ServerResponse;
    reply.shouldKeepAlive = false;
    reply.writeHead(400, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    reply.end(body);
  };
}

function configureHttp1(server: http.Server, headersTimeoutMs: number): void {
  // Long-lived streams must never be cut by server timeouts; headers still must arrive.
  server.requestTimeout = 0;
  server.headersTimeout = headersTimeoutMs;
  server.keepAliveTimeout = 65_000;
  server.setTimeout(0);
  server.on("clientError", answerClientError);
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
