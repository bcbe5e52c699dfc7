import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { errorBody, type Reason, reasons } from "../errors/index.ts";

/** What the HTTP/1.1 parser's refusals become (Node's own answers have no body). */
const clientErrors: Record<string, { status: number; reason: Reason }> = {
  HPE_HEADER_OVERFLOW: { status: 431, reason: "headers_too_large" },
  HPE_URI_TOO_LONG: { status: 414, reason: "uri_too_long" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: "request_timeout" },
};

/**
 * The `clientError` handler of a server that speaks HTTP/1.1: answers requests the parser
 * refused (oversized headers, garbage, header timeouts) with the usual JSON error body and
 * ends the connection. A client that keeps its own side open after that gets `lingerMs` to
 * read the answer and close; then the socket is destroyed (ending only our side would hold
 * the connection for as long as the client wanted). Destroying at once could reset the
 * connection while the client still sends, losing the answer.
 */
export function clientErrorAnswer(lingerMs: number): (err: Error & { code?: string }, socket: Duplex) => void {
  return (err, socket) => {
    if (err.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const known = err.code ? clientErrors[err.code] : undefined;
    const status = known?.status ?? 400;
    const reason: Reason = known?.reason ?? "invalid_argument";
    const message = known ? reasons[reason].message : "malformed HTTP request";
    const body = JSON.stringify(errorBody(reason, message));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    const timer = setTimeout(() => socket.destroy(), lingerMs);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
  };
}
