import { createContextKey } from "@connectrpc/connect";
import type { Principal } from "../session/index.ts";

/** What the transport tells a handler about the raw request (set in `src/app`). */
export interface RawRequestInfo {
  /** True once the peer reset the stream or the connection broke. */
  aborted(): boolean;
  /**
   * Resolves once every frame the peer sent before now has been processed (an HTTP/2 PING
   * round trip, plus a short wait for a proxy's late reset; at once on HTTP/1.1 or a closed
   * connection), so `aborted()` is then final for anything the client did before.
   */
  settled(): Promise<void>;
  /** The HTTP/2 stream the response goes out on (absent on HTTP/1.1): see `EnvelopeWriter`. */
  readonly body?: ResponseBody;
}

/** What of Node's `Http2Stream` the session writer uses to write responses around connect. */
export interface ResponseBody {
  readonly headersSent: boolean;
  readonly destroyed: boolean;
  readonly writable: boolean;
  write(chunk: Uint8Array): boolean;
  once(event: "drain" | "close", listener: () => void): unknown;
  off(event: "drain" | "close", listener: () => void): unknown;
}

export const rawRequestKey = createContextKey<RawRequestInfo | undefined>(undefined, { description: "raw request info" });

/** Resolves the bearer credentials of an RPC; throws RozError("unauthenticated"). */
export type RpcAuthenticator = (authorization: string | null, scope: string) => Promise<Principal>;
