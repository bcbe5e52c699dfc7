import type { OnePortOptions, Handler } from "./options.ts";

/**
 * The HTTP/1.1 counterpart of `resetWhenAnswered`: a response sent while part of its request's
 * body is unread (connect stops reading a body over its limit) would leave the connection
 * stuck, the next request behind bytes nobody reads. The rest is read and dropped, up to
 * `maxDrainBytes` and within `headersTimeoutMs`; beyond, or when the request was already let go
 * (destroyed), the connection is closed after the response.
 */
export function drainWhenAnswered(handler: Handler, options: Pick<OnePortOptions, "maxDrainBytes" | "headersTimeoutMs">): Handler {
  return (req, res) => {
    const socket = "socket" in req ? req.socket : null;
    res.once("finish", () => {
      if (req.complete || socket === null || socket.destroyed) return;
      const timer = setTimeout(() => socket.destroy(), options.headersTimeoutMs);
      timer.unref();
      socket.once("close", () => clearTimeout(timer));
      // A reader that gave up destroyed the request: nothing can read the rest, the connection ends after the response.
      if (req.destroyed) {
        socket.end();
        return;
      }
      let drained = 0;
      req.on("data", (chunk: Buffer) => {
        drained += chunk.byteLength;
        if (drained > options.maxDrainBytes) socket.destroy();
      });
      req.once("end", () => clearTimeout(timer));
      req.resume();
    });
    handler(req, res);
  };
}
