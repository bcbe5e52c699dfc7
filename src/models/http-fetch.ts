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

const agents = {
  "http:": new http.Agent({ keepAlive: true }),
  "https:": new https.Agent({ keepAlive: true }),
};

/** Streamed (SSE) reply bodies, until a reader takes them. */
const nodeBodies = new WeakMap<Response, { stream: Readable; taken: boolean }>();

/**
 * The Node stream of a streamed reply that `httpFetch` made, for a reader that does without
 * web streams (see `readSseJson`); undefined for other responses, or once the body was taken
 * either way.
 */
export function takeNodeBody(response: Response): Readable | undefined {
  const body = nodeBodies.get(response);
  if (body === undefined || body.taken) return undefined;
  body.taken = true;
  return body.stream;
}

const redirect = (status: number): boolean => status === 301 || status === 302 || status === 303 || status === 307 || status === 308;

/** The reply body, decompressed when the server compressed it. */
function decoded(res: http.IncomingMessage): Readable {
  const encoding = String(res.headers["content-encoding"] ?? "")
    .trim()
    .toLowerCase();
  const decoder =
    encoding === "gzip" || encoding === "x-gzip"
      ? zlib.createGunzip()
      : encoding === "deflate"
        ? zlib.createInflate()
        : encoding === "br"
          ? zlib.createBrotliDecompress()
          : undefined;
  if (decoder === undefined) return res;
  res.on("error", (err) => decoder.destroy(err));
  decoder.on("close", () => res.destroy());
  return res.pipe(decoder);
}

function responseHeaders(res: http.IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  // The body is handed on decompressed.
  headers.delete("content-encoding");
  headers.delete("content-length");
  return headers;
}

/** A web body over `stream`, attached only when something reads it (our SSE reader takes the Node stream instead). */
function lazyWebBody(stream: Readable, claim: () => boolean): ReadableStream<Uint8Array> {
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (reader === undefined) {
          if (!claim()) throw new TypeError("the response body was already taken");
          reader = (Readable.toWeb(stream) as ReadableStream<Uint8Array>).getReader();
        }
        const read = await reader.read();
        if (read.done) controller.close();
        else controller.enqueue(read.value);
      },
      cancel(reason) {
        stream.destroy(reason instanceof Error ? reason : undefined);
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

/** An error like the built-in fetch's: an abort is the signal's AbortError, anything else `TypeError("fetch failed")`. */
function fetchError(err: unknown, signal: AbortSignal | null | undefined): unknown {
  if (signal?.aborted || (err as { name?: unknown } | null)?.name === "AbortError") return err;
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
  const responseInit = { status, statusText: res.statusMessage ?? "", headers: responseHeaders(res) };
  if (status === 204 || status === 304 || init.method === "HEAD") {
    res.resume();
    return new Response(null, responseInit);
  }
  const stream = decoded(res);
  const streamed = status < 300 && String(res.headers["content-type"] ?? "").includes("text/event-stream");
  if (!streamed) {
    // Errors and JSON replies are small: read at once, the socket goes back to the pool.
    try {
      return new Response(new Uint8Array(await collect(stream)), responseInit);
    } catch (err) {
      throw fetchError(err, init.signal);
    }
  }
  const entry = { stream, taken: false };
  const claim = (): boolean => {
    if (entry.taken) return false;
    entry.taken = true;
    return true;
  };
  const response = new Response(lazyWebBody(stream, claim), responseInit);
  nodeBodies.set(response, entry);
  return response;
};
