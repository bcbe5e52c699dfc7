import * as http from "node:http";
import { errorBody } from "../errors/index.ts";
import { clientErrorAnswer } from "./http1-client-error.ts";
import type { Handler, OnePortOptions } from "./options.ts";
import { drainWhenAnswered } from "./unread-body.ts";

/** The handler HTTP/1.1 requests reach: with the Host check, and the rest of a body read after an early answer. */
export function http1Handler(handler: Handler, options: Pick<OnePortOptions, "maxDrainBytes" | "headersTimeoutMs">): Handler {
  return requireHost(drainWhenAnswered(handler, options));
}

/**
 * The inner HTTP/1.1 server of the cleartext port. Node checks header timeouts on
 * `connectionsCheckingInterval`: kept well below the timeout itself. The Host check is ours
 * (`http1Handler`): Node's own 400 has no body.
 */
export function createHttp1Server(handler: Handler, headersTimeoutMs: number): http.Server {
  const server = http.createServer(
    { connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeoutMs / 4))), requireHostHeader: false },
    handler as http.RequestListener,
  );
  configureHttp1(server, headersTimeoutMs);
  return server;
}

/**
 * Timeouts and refusals of a server that speaks HTTP/1.1 (the inner one, or the TLS server
 * when ALPN chose `http/1.1`): long-lived streams are never cut by server timeouts, but
 * headers still must arrive in time.
 */
export function configureHttp1(server: http.Server, headersTimeoutMs: number): void {
  server.requestTimeout = 0;
  server.headersTimeout = headersTimeoutMs;
  server.keepAliveTimeout = 65_000;
  server.setTimeout(0);
  server.on("clientError", clientErrorAnswer(headersTimeoutMs));
}

/**
 * An HTTP/1.1 request without a Host header is a 400 (RFC 9112 §3.2), in the JSON error shape
 * of every other answer; the connection then closes.
 */
function requireHost(handler: Handler): Handler {
  return (req, res) => {
    if (req.httpVersionMajor !== 1 || req.httpVersionMinor < 1 || req.headers.host !== undefined) return handler(req, res);
    const body = JSON.stringify(errorBody("invalid_argument", "an HTTP/1.1 request needs a Host header"));
    const reply = res as http.ServerResponse;
    reply.shouldKeepAlive = false;
    reply.writeHead(400, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    reply.end(body);
  };
}
