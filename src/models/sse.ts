import { APIError } from "openai";
import { ModelError } from "./model-error.ts";
import type { Readable } from "node:stream";
import { takeNodeBody } from "./http-fetch.ts";
import { Fairness, pullEvents } from "./push.ts";

interface SseMessage {
  event: string | undefined;
  data: string;
}

/** One SSE block (the lines between blank lines) → its event and data; undefined without data. */
function parseBlock(block: string): SseMessage | undefined {
  // The common block of Chat Completions: one `data: ` line (no split, no per-line slices).
  if (block.startsWith("data: ") && !block.includes("\n")) return { event: undefined, data: block.slice(6) };
  let event: string | undefined;
  let data: string | undefined;
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data = data === undefined ? value : `${data}\n${value}`;
    else if (field === "event") event = value;
  }
  return data === undefined ? undefined : { event, data };
}

/** Turns CRLF / CR line ends into LF, holding back a final CR whose LF may follow. */
function normalizeLineEnds(text: string): string {
  if (!text.includes("\r")) return text;
  const held = text.endsWith("\r") ? 1 : 0;
  return text.slice(0, text.length - held).replace(/\r\n?/g, "\n") + (held ? "\r" : "");
}

/** How long the provider may stay silent on an open stream before it counts as stalled. */
export interface IdleLimit {
  idleMs: number;
}

/** How handling a chunk ended the stream, if it did: `[DONE]`, or the caller aborted. */
type ChunkEnd = "done" | "aborted" | undefined;

/** The JSON payloads in a stream's bytes, with the semantics of the `openai` SDK's `Stream`. */
class SsePayloads<T> {
  readonly #decoder = new TextDecoder();
  #buffer = "";
  readonly headers: Headers;
  readonly signal: AbortSignal;
  readonly onData: (data: T) => void;

  constructor(headers: Headers, signal: AbortSignal, onData: (data: T) => void) {
    this.headers = headers;
    this.signal = signal;
    this.onData = onData;
  }

  /** Hands every payload complete with `bytes` to `onData`; throws the `APIError` of an error payload. */
  chunk(bytes: Uint8Array): ChunkEnd {
    const buffer = normalizeLineEnds(this.#buffer + this.#decoder.decode(bytes, { stream: true }));
    let start = 0;
    for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n", start)) {
      // Events already buffered when the caller aborted are not its any more.
      if (this.signal.aborted) return "aborted";
      const message = parseBlock(buffer.slice(start, end));
      start = end + 2;
      if (message === undefined) continue;
      if (message.data === "[DONE]") return "done";
      let data: { error?: unknown } | null;
      try {
        data = JSON.parse(message.data) as { error?: unknown } | null;
      } catch {
        throw new SyntaxError("Error reading response: malformed server-sent event JSON.");
      }
      if (message.event === "error") throw new APIError(undefined, (data?.error ?? data) as object, undefined, this.headers);
      if (data?.error) throw new APIError(undefined, data.error as object, undefined, this.headers);
      this.onData(data as T);
    }
    this.#buffer = buffer.slice(start);
    return undefined;
  }
}

/**
 * The idle limit of one stream: one timer for the whole stream, refreshed per chunk (a new
 * timer per chunk is a measurable cost at tens of thousands of chunks a second). It fires
 * only while the reader waits for data, then aborts `controller`.
 */
class IdleWatch {
  waiting = false;
  stalled = false;
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(idle: IdleLimit | undefined, controller: AbortController) {
    this.#timer =
      idle &&
      setTimeout(() => {
        if (!this.waiting) {
          this.#timer?.refresh();
          return;
        }
        this.stalled = true;
        controller.abort();
      }, idle.idleMs);
  }

  refresh(): void {
    this.#timer?.refresh();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
  }
}

/** How a stream's reading ended: at its end, at `[DONE]`, or because the caller aborted. */
type ReadEnd = "ended" | Exclude<ChunkEnd, undefined>;

/** Reads a web body: one awaited read per chunk, yielding to the event loop as `Fairness` says. */
async function readWebBody(reader: AsyncIterator<Uint8Array>, payloads: SsePayloads<unknown>, watch: IdleWatch): Promise<ReadEnd> {
  const fairness = new Fairness();
  for (;;) {
    watch.waiting = true;
    fairness.reading();
    const read = await reader.next();
    fairness.received();
    watch.waiting = false;
    if (read.done === true || watch.stalled) return "ended";
    const end = payloads.chunk(read.value);
    if (end === "done") await reader.return?.();
    if (end !== undefined) return end;
    await fairness.handled();
    watch.refresh();
  }
}

/** How long a reply may go on after `[DONE]` before its connection is cut. */
const AFTER_DONE_MS = 1000;

/**
 * After `[DONE]` the reply is over: the rest (its end, which usually came in the same read)
 * is read and dropped, so that the connection goes back to the keep-alive pool for the next
 * call; a server that goes on sending is cut after `AFTER_DONE_MS`.
 */
function dropRest(stream: Readable): void {
  if (stream.readableEnded || stream.destroyed) return;
  const timer = setTimeout(() => stream.destroy(), AFTER_DONE_MS);
  timer.unref();
  stream.once("close", () => clearTimeout(timer));
  stream.once("end", () => clearTimeout(timer));
  stream.resume();
}

/**
 * Reads a Node body (see `httpFetch`): each chunk is handled in the socket read that brought
 * it, without a promise or a web stream in between; when `Fairness` says so the stream is
 * paused for a turn of the event loop. A body cut short fails as the built-in fetch's does,
 * with `TypeError("terminated")`.
 */
function readNodeBody(stream: Readable, payloads: SsePayloads<unknown>, watch: IdleWatch): Promise<ReadEnd> {
  const fairness = new Fairness();
  const lost = (err?: unknown): unknown =>
    payloads.signal.aborted && err !== undefined ? err : new TypeError("terminated", err === undefined ? undefined : { cause: err });
  // A stream that ended or failed before it was taken fires no more events.
  if (stream.errored || (stream.destroyed && !stream.readableEnded)) return Promise.reject(lost(stream.errored ?? undefined));
  if (stream.readableEnded) return Promise.resolve("ended");
  return new Promise<ReadEnd>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      watch.waiting = false;
      outcome();
    };
    const wait = (): void => {
      watch.waiting = true;
      fairness.reading();
    };
    stream.on("data", (chunk: Buffer) => {
      if (settled) return;
      fairness.received();
      watch.waiting = false;
      if (watch.stalled) return settle(() => resolve("ended"));
      let end: ChunkEnd;
      try {
        end = payloads.chunk(chunk);
      } catch (err) {
        return settle(() => reject(err));
      }
      if (end === "done") dropRest(stream);
      if (end !== undefined) return settle(() => resolve(end));
      watch.refresh();
      const turn = fairness.handled();
      if (turn === undefined) return wait();
      stream.pause();
      void turn.then(() => {
        if (settled) return;
        wait();
        stream.resume();
      });
    });
    stream.once("end", () => settle(() => resolve("ended")));
    stream.once("error", (err) => settle(() => reject(lost(err))));
    stream.once("close", () => settle(() => reject(lost())));
    wait();
  });
}

/**
 * Reads the JSON payloads of a streaming response into `onData`, with the semantics of the
 * `openai` SDK's own `Stream` (`[DONE]` ends it; an `error` payload or `event: error`
 * throws its `APIError`; an abort through `signal` ends it quietly, the caller tells by
 * the signal) but a lean parser: the SDK's line decoding costs more CPU per chunk than
 * everything else a session does with a delta. The request itself is still made by the
 * SDK's client. Payloads are pushed as parsed, all of one network read in one go. A reply
 * of `httpFetch` is read from its Node stream, any other from its web body.
 *
 * With `idle`, a stream that sends nothing for `idleMs` (the time spent in `onData` does
 * not count) is aborted and fails with a retryable ModelError, instead of hanging the
 * turn forever. Ending any other way than at its end aborts `controller`, which cancels
 * the HTTP request; an `onData` that throws ends it so, with that error.
 */
export async function readSseJson<T>(
  response: Response,
  controller: AbortController,
  signal: AbortSignal,
  onData: (data: T) => void,
  idle?: IdleLimit,
): Promise<void> {
  const node = takeNodeBody(response);
  const web = node ? undefined : (response.body as unknown as AsyncIterable<Uint8Array> | null)?.[Symbol.asyncIterator]();
  if (node === undefined && web === undefined) return;
  const payloads = new SsePayloads<T>(response.headers, signal, onData) as SsePayloads<unknown>;
  const watch = new IdleWatch(idle, controller);
  let done = false;
  try {
    const end = node ? await readNodeBody(node, payloads, watch) : await readWebBody(web as AsyncIterator<Uint8Array>, payloads, watch);
    done = end === "done" || (end === "ended" && !watch.stalled);
  } catch (err) {
    if (watch.stalled) throw stallError(idle as IdleLimit);
    if (signal.aborted) return;
    throw err;
  } finally {
    watch.stop();
    if (!done) controller.abort();
  }
  if (watch.stalled) throw stallError(idle as IdleLimit);
}

const stallError = (idle: IdleLimit): ModelError =>
  new ModelError(`the model provider sent nothing for ${Math.round(idle.idleMs / 1000)} s`, { retryable: true });

/** The pull form of `readSseJson`: leaving early aborts `controller`, which cancels the HTTP request. */
export function sseJson<T>(response: Response, controller: AbortController, signal: AbortSignal): AsyncIterable<T> {
  return pullEvents<T>((sink, stop) => {
    stop.addEventListener("abort", () => controller.abort(), { once: true });
    return readSseJson(response, controller, signal, sink);
  }, signal);
}

/** An open streaming response: `read` pushes its payloads (see `readSseJson`); `controller` aborts its HTTP request. */
export interface SseStream<T> {
  readonly controller: AbortController;
  read(onData: (data: T) => void, idle?: IdleLimit): Promise<void>;
}

/**
 * Sends a streaming request through the SDK (`send` gets the signal to pass on) and
 * returns its open stream.
 */
export async function openSse<T>(requestSignal: AbortSignal, send: (signal: AbortSignal) => { asResponse(): Promise<Response> }): Promise<SseStream<T>> {
  const controller = new AbortController();
  const signal = AbortSignal.any([requestSignal, controller.signal]);
  const response = await send(signal).asResponse();
  return { controller, read: (onData, idle) => readSseJson<T>(response, controller, signal, onData, idle) };
}
