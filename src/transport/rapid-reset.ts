import * as http2 from "node:http2";
import type { DispatchedStreams } from "./dispatched-streams.ts";
import { ParsedStreams } from "./parsed-streams.ts";
import { perSecondCap } from "./per-second-cap.ts";

/** Streams in flight a gentle calm (`#calmGently`) cancels per turn of the loop. */
const STREAMS_CANCELLED_PER_TURN = 8;

/**
 * Settings of nghttp2's own rapid-reset guard, behind ours: a burst of client resets four
 * times our cap ends the session before any more streams reach JavaScript (Node's default
 * burst is 1000); ours answers first, with ENHANCE_YOUR_CALM. With our guard off (0), so is
 * nghttp2's.
 */
export function nghttp2ResetLimits(maxResetsPerSecond: number): { streamResetBurst: number; streamResetRate: number } {
  if (maxResetsPerSecond > 0) return { streamResetBurst: 4 * maxResetsPerSecond, streamResetRate: maxResetsPerSecond };
  return { streamResetBurst: 2 ** 31 - 1, streamResetRate: 2 ** 31 - 1 };
}

/**
 * The HTTP/2 rapid-reset guard: a connection that opens more than `maxStreamsPerSecond`
 * streams, or resets more than `maxResetsPerSecond` of them itself, within any one second
 * (opening and resetting costs the client nothing, dispatching costs us) gets
 * GOAWAY(ENHANCE_YOUR_CALM) and is closed (over the opening cap with many streams in flight,
 * after `#calmGently`). Streams are counted as they are parsed (`ParsedStreams`).
 */
export class RapidResetGuard {
  readonly #parsed = new ParsedStreams();
  readonly #dispatched: DispatchedStreams;
  readonly #maxStreamsPerSecond: number;
  readonly #maxResetsPerSecond: number;

  constructor(dispatched: DispatchedStreams, maxStreamsPerSecond: number, maxResetsPerSecond: number) {
    this.#dispatched = dispatched;
    this.#maxStreamsPerSecond = maxStreamsPerSecond;
    this.#maxResetsPerSecond = maxResetsPerSecond;
  }

  watch(session: http2.ServerHttp2Session): void {
    const opened = perSecondCap(this.#maxStreamsPerSecond);
    const reset = perSecondCap(this.#maxResetsPerSecond);
    this.#parsed.watch(session, {
      opened: () => {
        if (opened()) this.#calmGently(session);
      },
      reset: () => {
        // A calming connection's streams are cancelled by us, not reset by the client.
        if (reset() && !this.#dispatched.calming(session)) calm(session);
      },
    });
  }

  /** Stops counting (the server closed). */
  close(): void {
    this.#parsed.close();
  }

  /**
   * The opening cap's answer. Closing the connection at once ends every stream it has in one
   * turn of the loop, and connect unwinds each call then, which adds up for the streams a
   * flood keeps waiting for `start`. (A rapid reset has few streams in flight: they are reset
   * before they are dispatched.) With more than a turn's worth in flight, the connection's new
   * streams are dropped at once while those in flight are cancelled (RST_STREAM(CANCEL))
   * `STREAMS_CANCELLED_PER_TURN` per turn; then GOAWAY(ENHANCE_YOUR_CALM) and the connection is
   * closed. GOAWAY comes last because a client closes its side when it gets one, which would
   * end the rest in one turn again.
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
}

/** GOAWAY(ENHANCE_YOUR_CALM), then the connection is closed. */
function calm(session: http2.ServerHttp2Session): void {
  if (session.destroyed) return;
  session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
  session.destroy();
}
