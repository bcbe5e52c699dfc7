import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { Readable } from "node:stream";
import { decoded, decoderFor, keepAliveAgentOptions, responseHeaders } from "../models/index.ts";
import type { AddressGuard } from "./address-guard.ts";

/** The `fetch` shape the MCP SDK takes. */
export type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** A `fetch` whose sockets only reach addresses the guard allowed, and its connection pools. */
export interface PinnedFetch {
  fetch: Fetch;
  /** Closes the pooled keep-alive sockets. */
  close(): void;
}

/** Statuses whose response has no body (fetch's `Response` refuses one). */
const NULL_BODY = new Set([204, 205, 304]);

/**
 * Resolves through the guard: every address DNS answers is checked, and the socket connects
 * to one of exactly those, so an answer that changes between a check and the connect cannot
 * lead anywhere else. Address literals never reach a lookup: the guard's `checkTarget` checks them.
 */
function pinnedLookup(guard: AddressGuard): LookupFunction {
  return (hostname, options, callback) => {
    guard.resolve(hostname).then(
      (found) => {
        const family = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0;
        const usable = family === 0 ? found : found.filter((a) => a.family === family);
        const first = usable[0];
        if (first === undefined) callback(Object.assign(new Error(`no IPv${family} address for ${hostname}`), { code: "ENOTFOUND" }), "", family);
        else if (options.all === true) callback(null, usable);
        else callback(null, first.address, first.family);
      },
      (err: Error) => callback(err, "", 0),
    );
  };
}

function responseOf(res: http.IncomingMessage, method: string): Response {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 599) {
    res.destroy();
    throw new Error(`HTTP status ${status} is not a response`);
  }
  const statusText = res.statusMessage ?? "";
  if (method === "HEAD" || NULL_BODY.has(status)) {
    res.resume();
    return new Response(null, { status, statusText, headers: responseHeaders(res, false) });
  }
  const decoder = decoderFor(res);
  const body = Readable.toWeb(decoded(res, decoder)) as ReadableStream<Uint8Array>;
  return new Response(body, { status, statusText, headers: responseHeaders(res, decoder !== undefined) });
}

/**
 * A `fetch` for MCP servers and their authorization servers over Node's HTTP client, whose
 * agents resolve host names through `guard` (DNS pinning for the SSRF guard). Redirects are
 * not followed here (guarded-fetch.ts does that); bodies are streamed (SSE) and `signal`
 * aborts the request and its body.
 */
export function pinnedFetch(guard: AddressGuard): PinnedFetch {
  const lookup = pinnedLookup(guard);
  // Pooled as the providers' fetch pools (idle sockets closed before the server's keep-alive ends).
  const agents = { "http:": new http.Agent({ ...keepAliveAgentOptions, lookup }), "https:": new https.Agent({ ...keepAliveAgentOptions, lookup }) };
  const fetch: Fetch = async (input, init = {}) => {
    const url = new URL(String(input));
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError(`cannot fetch ${url.protocol} URLs`);
    // A Request normalises headers and body (string, URLSearchParams, bytes) as fetch would.
    const request = new Request(url, { method: init.method ?? "GET", headers: init.headers ?? {}, body: init.body ?? null });
    const body = request.body === null ? undefined : Buffer.from(await request.arrayBuffer());
    const headers: Record<string, string> = { "accept-encoding": "gzip, deflate, br" };
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    if (body !== undefined) headers["content-length"] = String(body.length);
    const client = url.protocol === "https:" ? https : http;
    return new Promise<Response>((resolve, reject) => {
      const req = client.request(
        url,
        { method: request.method, headers, agent: agents[url.protocol as "http:" | "https:"], ...(init.signal ? { signal: init.signal } : {}) },
        (res) => {
          try {
            resolve(responseOf(res, request.method));
          } catch (err) {
            reject(err);
          }
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  };
  return {
    fetch,
    close() {
      agents["http:"].destroy();
      agents["https:"].destroy();
    },
  };
}
