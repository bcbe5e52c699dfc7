/**
 * The `fetch` the provider SDKs are given: HTTP/1.1 over `node:http`/`node:https` with one
 * keep-alive pool per protocol, for the requests they make (a JSON body, a signal).
 *
 * Why not Node's built-in fetch: each chunk of a streamed reply went through undici's own
 * async iteration of a Node stream and then a web stream, a few promises per chunk, before
 * our SSE reader saw it. Read from the Node stream itself (`takeNodeBody`), in the socket
 * read that brought it, a delta costs the server 18 % less CPU at 50 sessions and 7 % less at
 * 200, where it also waits about half as long (bench `scale`, alternated runs).
 *
 * What it does not handle itself it hands to the built-in fetch, so nothing changes there:
 * request bodies other than text or bytes (forms, streams), redirects, and every request
 * while Node's proxy support is on (`NODE_USE_ENV_PROXY=1` or `--use-env-proxy`: the
 * built-in fetch then goes through `HTTP(S)_PROXY`). Compressed replies are decompressed.
 */
import * as http from "node:http";
import * as https from "node:https";
import { Readable } from "node:stream";
import * as zlib from "node:zlib";

// An idle pooled socket is closed after 4 s, or sooner when the server's `Keep-Alive:
// timeout` says so (Node honours that hint only when the agent has a timeout of its own),
// so a call does not fail on a socket the server already closed. 4 s is undici's default.
export const keepAliveAgentOptions = { keepAlive: true, timeout: 4000 };
const agents = {
  "http:": new http.Agent(keepAliveAgentOptions),
  "https:": new https.Agent(keepAliveAgentOptions),
};

/** A successful reply's body: its Node stream, and whether a reader (Node or web side) took it. */
interface NodeBody {
  stream: Readable;
  taken: boolean;
}

/** Takes `body` for one reader; false when another already did. */
function claim(body: NodeBody): boolean {
  if (body.taken) return false;
  body.taken = true;
  return true;
}

/** Successful replies' bodies, until a reader takes them. */
const nodeBodies = new WeakMap<Response, NodeBody>();

/**
 * The Node stream of a successful (2xx) reply that `httpFetch` made, for a reader that does
 * without web streams (see `readSseJson`); undefined for other responses, or once the body
 * was taken either way.
 */
export function takeNodeBody(response: Response): Readable | undefined {
  const body = nodeBodies.get(response);
  return body !== undefined && claim(body) ? body.stream : undefined;
}

const redirect = (status: number): boolean => status === 301 || status === 302 || status === 303 || status === 307 || status === 308;

// Lenient about a truncated end, as undici is: what was decoded is kept.
const zlibOptions = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
const brotliOptions = { flush: zlib.constants.BROTLI_OPERATION_FLUSH, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH };

/** The decoder of a reply's `content-encoding`; undefined when its body is not compressed. */
export function decoderFor(res: http.IncomingMessage): zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | undefined {
  const encoding = String(res.headers["content-encoding"] ?? "")
    .trim()
    .toLowerCase();
  if (encoding === "gzip" || encoding === "x-gzip") return zlib.createGunzip(zlibOptions);
  if (encoding === "deflate") return zlib.createInflate(zlibOptions);
  if (encoding === "br") return zlib.createBrotliDecompress(brotliOptions);
  return undefined;
}

/** The reply body, decompressed when the server compressed it. */
export function decoded(res: http.IncomingMessage, decoder: ReturnType<typeof decoderFor>): Readable {
  if (decoder === undefined) return res;
  res.on("error", (err) => decoder.destroy(err));
  // The decoder's error is its reader's to handle (`errored` keeps it); a reply no one
  // reads must not throw it at the process. An IncomingMessage already behaves so.
  decoder.on("error", () => {});
  decoder.on("close", () => res.destroy());
  return res.pipe(decoder);
}

/** A reply's headers as fetch shows them (without the encoding and length of a decompressed body). */
export function responseHeaders(res: http.IncomingMessage, decompressed: boolean): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  if (decompressed) {
    headers.delete("content-encoding");
    headers.delete("content-length");
  }
  return headers;
}

/** A web body over `stream`, attached only when something reads it (our SSE reader takes the Node stream instead). */
function lazyWebBody(body: NodeBody): ReadableStream<Uint8Array> {
  const { stream } = body;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (reader === undefined) {
          if (!claim(body)) throw new TypeError("the response body was already taken");
          reader = (Readable.toWeb(stream) as ReadableStream<Uint8Array>).getReader();
        }
        const read = await reader.read();
        if (read.done) controller.close();
        else controller.enqueue(read.value);
      },
      async cancel(reason) {
        // Only a body the web side holds, or no one yet: not one our SSE reader took.
        if (reader !== undefined) await reader.cancel(reason);
        else if (claim(body)) stream.destroy();
      },
    },
    // No read ahead: a web stream pulls at once up to its high-water mark, which would take
    // the body from our SSE reader before it asked.
    { highWaterMark: 0 },
  );
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** An error like the built-in fetch's: an abort is the signal's reason, anything else `TypeError("fetch failed")`. */
function fetchError(err: unknown, signal: AbortSignal | null | undefined): unknown {
  if (signal?.aborted) return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
  if ((err as { name?: unknown } | null)?.name === "AbortError") return err;
  return new TypeError("fetch failed", { cause: err });
}

/** Whether Node's built-in proxy support is on; it covers the built-in fetch. */
function usesEnvProxy(): boolean {
  const flag = "--use-env-proxy";
  return Boolean(process.env.NODE_USE_ENV_PROXY) || process.execArgv.includes(flag) || (process.env.NODE_OPTIONS ?? "").includes(flag);
}

export const httpFetch: typeof fetch = async (input, init = {}) => {
  const body = init.body;
  const plainBody = body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array;
  if (input instanceof Request || !plainBody || usesEnvProxy()) return fetch(input, init);
  const url = new URL(String(input));
  const agent = agents[url.protocol as keyof typeof agents];
  if (agent === undefined) return fetch(input, init);
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const request = (url.protocol === "https:" ? https : http).request(url, {
      method: init.method ?? "GET",
      headers,
      agent,
      ...(init.signal ? { signal: init.signal } : {}),
    });
    request.once("response", resolve);
    // Also after the response: its errors then reach the body's reader through the response.
    request.on("error", (err) => reject(fetchError(err, init.signal)));
    request.end(body ?? undefined);
  });
  const status = res.statusCode ?? 0;
  if (redirect(status) && res.headers.location !== undefined) {
    res.resume();
    return fetch(input, init);
  }
  if (status === 204 || status === 205 || status === 304 || init.method === "HEAD") {
    res.resume();
    return new Response(null, { status, statusText: res.statusMessage ?? "", headers: responseHeaders(res, false) });
  }
  const decoder = decoderFor(res);
  const responseInit = { status, statusText: res.statusMessage ?? "", headers: responseHeaders(res, decoder !== undefined) };
  const stream = decoded(res, decoder);
  if (status >= 300) {
    // Error replies are small: read at once, the socket goes back to the pool.
    try {
      return new Response(new Uint8Array(await collect(stream)), responseInit);
    } catch (err) {
      throw fetchError(err, init.signal);
    }
  }
  const nodeBody: NodeBody = { stream, taken: false };
  const response = new Response(lazyWebBody(nodeBody), responseInit);
  nodeBodies.set(response, nodeBody);
  return response;
};
