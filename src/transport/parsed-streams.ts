import * as diagnostics from "node:diagnostics_channel";
import type * as http2 from "node:http2";

export interface StreamCounters {
  /** A stream was opened by the client. */
  opened(): void;
  /** A stream was closed before its response was complete: the client reset it. */
  reset(): void;
}

/**
 * Counts the streams of watched sessions as nghttp2 reads them. Node announces a new stream
 * with the session's 'stream' event only after the whole socket read was parsed, and one read
 * can hold a thousand opened-and-reset streams: counted there, a connection over its cap was
 * closed only after all of them were built, in one block of the event loop. Node's
 * diagnostics channels `http2.server.stream.created` and `http2.server.stream.close` fire as
 * each stream's frame is parsed, and a session closed there reads no further frames.
 */
export class ParsedStreams {
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
