import * as http2 from "node:http2";
import type { DispatchedStreams } from "./dispatched-streams.ts";
import type { EarlyAnswer, Handler, OnePortOptions } from "./options.ts";

/**
 * New streams dispatched in one turn of the event loop, over all connections; the rest wait.
 * Each builds a fair amount of short-lived objects (connect's pipeline, Fastify's request):
 * fewer per turn keep the loop's blocks shorter in a flood, and a burst of streams on one
 * connection is dispatched over more turns in exchange.
 */
const STREAMS_PER_TURN = 4;

/**
 * Early answers (`answerEarly`) written in a turn for each dispatch it could hold instead.
 * An answer is a few header blocks and one small DATA frame; a dispatch builds Fastify's
 * request and connect's handler.
 */
const ANSWERS_PER_DISPATCH = 16;

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
 *   it is read by then and the stream is dropped instead of dispatched. Every stream waits
 *   that one turn of the loop;
 * - at most `STREAMS_PER_TURN` new streams are dispatched per turn; the others wait in a
 *   queue per connection and are taken in turns, one from each connection at a time, so a
 *   flood on one connection delays only itself. Streams reset while they wait are dropped too;
 * - a stream `answerEarly` answers from its headers is written here instead of dispatched,
 *   `ANSWERS_PER_DISPATCH` of them in the place of one dispatch.
 * HTTP/1.1 requests (inside TLS, chosen by ALPN) go to `h1Handler`.
 */
export function dispatchStreams(
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
