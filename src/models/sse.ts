import { APIError } from "openai";

interface SseMessage {
  event: string | undefined;
  data: string;
}

/** One SSE block (the lines between blank lines) → its event and data; undefined without data. */
function parseBlock(block: string): SseMessage | undefined {
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

/**
 * The JSON payloads of a streaming response, with the semantics of the `openai` SDK's own
 * `Stream` (`[DONE]` ends it; an `error` payload or `event: error` throws its `APIError`;
 * an abort through `signal` ends it quietly, the caller tells by the signal) but a lean
 * parser: the SDK's line decoding costs more CPU per chunk than everything else a session
 * does with a delta. The request itself is still made by the SDK's client.
 *
 * Leaving early aborts `controller`, which cancels the HTTP request.
 */
export async function* sseJson<T>(response: Response, controller: AbortController, signal: AbortSignal): AsyncGenerator<T, void, undefined> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let buffer = "";
  let done = false;
  try {
    for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer = normalizeLineEnds(buffer + decoder.decode(bytes, { stream: true }));
      let start = 0;
      for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n", start)) {
        // Events already buffered when the caller aborted are not its any more.
        if (signal.aborted) return;
        const message = parseBlock(buffer.slice(start, end));
        start = end + 2;
        if (message === undefined) continue;
        if (message.data === "[DONE]") {
          done = true;
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
        yield data as T;
      }
      buffer = buffer.slice(start);
    }
    done = true;
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  } finally {
    if (!done) controller.abort();
  }
}

/**
 * Sends a streaming request through the SDK (`send` gets the signal to pass on) and reads
 * its body with `sseJson`. The returned `controller` aborts the HTTP request.
 */
export async function openSse<T>(
  requestSignal: AbortSignal,
  send: (signal: AbortSignal) => { asResponse(): Promise<Response> },
): Promise<AsyncIterable<T> & { controller: AbortController }> {
  const controller = new AbortController();
  const signal = AbortSignal.any([requestSignal, controller.signal]);
  const response = await send(signal).asResponse();
  return Object.assign(sseJson<T>(response, controller, signal), { controller });
}
