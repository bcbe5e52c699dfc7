import type * as http2 from "node:http2";

/** The dispatched streams of each connection that are still open, and the connections being calmed. */
export class DispatchedStreams {
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
