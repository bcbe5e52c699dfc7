import type { Socket } from "node:net";

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export interface SniffOutcome {
  /** The socket started with the preface: hand it to HTTP/2 as it is (paused). */
  http2(socket: Socket): void;
  /** It did not: hand it to HTTP/1.1. */
  http1(socket: Socket): void;
}

/**
 * Reads the first bytes of a cleartext connection and hands the socket on, those bytes put
 * back, to HTTP/2 when they are the preface (h2c prior knowledge, split across TCP segments
 * or not), else to HTTP/1.1. A socket that shows nothing, or only part of the preface, within
 * `timeoutMs` is closed instead of held forever, and so is one whose first bytes arrive once
 * `closing()` is true.
 */
export function sniffPreface(socket: Socket, timeoutMs: number, outcome: SniffOutcome, closing: () => boolean): void {
  // A reset during sniffing must not crash the process.
  socket.on("error", () => socket.destroy());
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  socket.once("close", () => clearTimeout(timer));
  let seen = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    seen = Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, PREFACE.length);
    const isH2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
    if (isH2 && seen.length < PREFACE.length) return;
    clearTimeout(timer);
    socket.off("data", onData);
    socket.pause();
    socket.unshift(seen);
    if (closing()) socket.destroy();
    // The HTTP/2 session reads the socket natively and takes the unshifted bytes with
    // `socket.read()` on the next tick. Resuming here would let this 'data' emission's
    // flow loop drain (and drop) them first: "bad client magic" on Node 24.
    else if (isH2) outcome.http2(socket);
    else {
      outcome.http1(socket);
      socket.resume();
    }
  };
  socket.on("data", onData);
  socket.resume();
}
