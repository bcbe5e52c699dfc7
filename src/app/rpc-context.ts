import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { type ContextValues, createContextValues } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import { rawRequestKey } from "../rpc/index.ts";
import { pingRoundTrip } from "../transport/index.ts";

/** How long after the PING round trip at a request's END_STREAM a reset still counts as the client going away. */
const RESET_AFTER_END_MS = 100;

/**
 * The Connect plugin's per-call context values: the raw request's body stream, whether the
 * client has gone away (`aborted`), and `settled`, which resolves once a client that ended its
 * request stream has had the time to reset it (a reset means it left; silence means it waits).
 */
export function rpcContextValues(req: FastifyRequest): ContextValues {
  const raw = req.raw as IncomingMessage | Http2ServerRequest;
  return createContextValues().set(rawRequestKey, {
    ...("stream" in raw && raw.stream ? { body: raw.stream } : {}),
    settled: () =>
      new Promise<void>((resolve) => {
        const stream = "stream" in raw ? raw.stream : undefined;
        const session = stream?.session;
        if (!stream || !session || stream.destroyed || session.destroyed || session.closed) return resolve();
        let timer: NodeJS.Timeout | undefined;
        stream.once("close", () => {
          clearTimeout(timer);
          resolve();
        });
        // A proxy answers the PING itself, and HAProxy passes a client's reset on as END_STREAM
        // followed, a few ms later, by RST_STREAM: a reset that soon after the PING still counts.
        void pingRoundTrip(session).then(() => {
          timer = setTimeout(resolve, RESET_AFTER_END_MS);
        });
      }),
    aborted: () => {
      if ("stream" in raw && raw.stream) return raw.stream.aborted || (raw.stream.rstCode ?? 0) !== 0 || raw.stream.destroyed;
      return raw.socket?.destroyed ?? true;
    },
  });
}
