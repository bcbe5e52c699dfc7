import { APIError } from "openai";
import { ModelError } from "./model-error.ts";
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

/**
 * Reads the JSON payloads of a streaming response into `onData`, with the semantics of the
 * `openai` SDK's own `Stream` (`[DONE]` ends it; an `error` payload or `event: error`
 * throws its `APIError`; an abort through `signal` ends it quietly, the caller tells by
 * the signal) but a lean parser: the SDK's line decoding costs more CPU per chunk than
 * everything else a session does with a delta. The request itself is still made by the
 * SDK's client. Payloads are pushed as parsed, all of one network read in one go.
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
  if (!response.body) return;
  const decoder = new TextDecoder();
  const fairness = new Fairness();
  let buffer = "";
  let done = false;
  let stalled = false;
  let reading = false;
  // One timer for the whole stream, refreshed per read: a new timer per chunk is a
  // measurable cost when providers stream tens of thousands of chunks a second.
  const timer =
    idle &&
    setTimeout(function onIdle() {
      if (!reading) {
        timer?.refresh();
        return;
      }
      stalled = true;
      controller.abort();
    }, idle.idleMs);
  try {
    const reader = (response.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
    for (;;) {
      reading = true;
      fairness.reading();
      const read = await reader.next();
      fairness.received();
      reading = false;
      if (read.done === true || stalled) break;
      buffer = normalizeLineEnds(buffer + decoder.decode(read.value, { stream: true }));
      let start = 0;
      for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n", start)) {
        // Events already buffered when the caller aborted are not its any more.
        if (signal.aborted) return;
        const message = parseBlock(buffer.slice(start, end));
        start = end + 2;
        if (message === undefined) continue;
        if (message.data === "[DONE]") {
          done = true;
          await reader.return?.();
          return;
        }
        let data: { error?: unknown } | null;
        try {
          data = JSON.parse(message.data) as { error?: unknown } | null;
        } catch {
          throw new SyntaxError("Error reading response: malformed server-sent event JSON.");
        }
        if (message.event === "error") throw new APIError(undefined, (data?.error ?? data) as object, undefined, response.headers);
        if (data?.error) throw new APIError(undefined, data.error as object, undefined, response.headers);
        onData(data as T);
      }
      buffer = buffer.slice(start);
      await fairness.handled();
      timer?.refresh();
    }
    if (!stalled) done = true;
  } catch (err) {
    if (stalled) throw stallError(idle as IdleLimit);
    if (signal.aborted) return;
    throw err;
  } finally {
    if (timer) clearTimeout(timer);
    if (!done) controller.abort();
  }
  if (stalled) throw stallError(idle as IdleLimit);
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
