import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { type ResponseBody, rawRequestKey } from "./context-values.ts";
import { envelopes } from "./framing.ts";
import { isJsonCall } from "./response-writer.ts";

/** Messages from this size on are compressed when the client accepts it (connect's `compressMinBytes`). */
export const COMPRESS_MIN_BYTES = 1024;

/**
 * Writes a binary call's responses straight onto its HTTP/2 stream, past connect's per-message
 * pipeline (a chain of async generators, and a promise with two listeners per write: most of
 * what a streamed delta cost). Safe once connect has sent the response headers: connect asks
 * the handler for its next response only after it wrote the previous one, so these bytes
 * follow everything connect was given, and its end of stream (trailers, or the last frame of
 * gRPC-Web and Connect) follows them. A message connect would compress is left to connect.
 */
export class EnvelopeWriter {
  readonly #body: ResponseBody;
  readonly #compressing: boolean;
  readonly #signal: AbortSignal;

  /** `compressing`: the call negotiated a response encoding; `signal`: the call's (a deadline or a cancel ends a wait). */
  constructor(body: ResponseBody, compressing: boolean, signal: AbortSignal) {
    this.#body = body;
    this.#compressing = compressing;
    this.#signal = signal;
  }

  /** The writer of a binary call on HTTP/2; undefined for JSON calls and on HTTP/1.1. */
  static of(ctx: HandlerContext): EnvelopeWriter | undefined {
    const body = isJsonCall(ctx) ? undefined : ctx.values.get(rawRequestKey)?.body;
    if (body === undefined) return undefined;
    // Connect names the response encoding it negotiated before the handler runs.
    const compressing = ctx.responseHeader.has("grpc-encoding") || ctx.responseHeader.has("connect-content-encoding");
    return new EnvelopeWriter(body, compressing, ctx.signal);
  }

  /** Whether `messages` may go straight onto the stream now. */
  takes(messages: readonly Uint8Array[]): boolean {
    if (!this.#body.headersSent) return false;
    return !this.#compressing || messages.every((m) => m.length < COMPRESS_MIN_BYTES);
  }

  /**
   * Writes `messages`. Resolves once the stream takes more, or the stream closed, or the
   * call's signal aborted (undefined when the stream takes more already); a stream the
   * client has gone from fails the call, as a failed write through connect does.
   */
  write(messages: readonly Uint8Array[]): Promise<void> | undefined {
    if (messages.length === 0) return undefined;
    const body = this.#body;
    if (body.destroyed || !body.writable) throw new ConnectError("the client went away", Code.Canceled);
    if (body.write(envelopes(messages)) || this.#signal.aborted) return undefined;
    const signal = this.#signal;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        body.off("drain", done);
        body.off("close", done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      body.once("drain", done);
      body.once("close", done);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}
