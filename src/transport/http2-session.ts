import type * as http2 from "node:http2";
import type { OnePortOptions } from "./options.ts";

/**
 * The timers of one HTTP/2 connection:
 * - a client that sent the preface but no SETTINGS within `handshakeTimeoutMs` is not
 *   speaking HTTP/2;
 * - one that opens no stream within `headersTimeoutMs` gets as long as an HTTP/1.1 request's
 *   headers get, and is closed too (a preface and SETTINGS, then nothing, were held forever);
 * - a PING every `pingIntervalMs` (0 = none): a peer that does not answer one within an
 *   interval is gone.
 */
export function watchHttp2Session(
  session: http2.ServerHttp2Session,
  options: Pick<OnePortOptions, "handshakeTimeoutMs" | "headersTimeoutMs" | "pingIntervalMs">,
): void {
  const settingsTimer = setTimeout(() => session.destroy(), options.handshakeTimeoutMs);
  session.once("remoteSettings", () => clearTimeout(settingsTimer));
  const firstStreamTimer = setTimeout(() => session.destroy(), options.headersTimeoutMs);
  session.once("stream", () => clearTimeout(firstStreamTimer));
  let pingTimer: NodeJS.Timeout | undefined;
  if (options.pingIntervalMs > 0) {
    pingTimer = setInterval(() => {
      const sent = session.ping((err) => {
        if (err && !session.destroyed) session.destroy();
      });
      if (!sent && !session.destroyed && !session.closed) session.destroy();
    }, options.pingIntervalMs);
    pingTimer.unref();
  }
  session.on("error", () => {});
  session.once("close", () => {
    clearTimeout(settingsTimer);
    clearTimeout(firstStreamTimer);
    if (pingTimer) clearInterval(pingTimer);
  });
}
