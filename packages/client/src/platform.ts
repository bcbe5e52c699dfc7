import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { AgentService } from "./gen/roz/v1/agent_pb.js";
import type { RozClientOptions, TransportKind } from "./options.ts";

/** The AgentService over one transport, and how to let go of its connections. */
export interface Connection {
  readonly kind: TransportKind;
  readonly agent: Client<typeof AgentService>;
  close(): void;
}

/** What differs between Node and browsers: which transports exist, and the default. */
export interface Platform {
  readonly defaultTransport: TransportKind;
  /** A Connect transport of `kind` (throws RozError `unsupported_transport` where it cannot exist). */
  transport(kind: TransportKind, options: RozClientOptions, interceptors: Interceptor[]): { transport: Transport; close(): void };
}

/**
 * Every call carries the key, the caller's headers and `roz-event-format: flat` (the library
 * reads flat responses whatever the server's default format is).
 */
function headersInterceptor(options: RozClientOptions): Interceptor {
  return (next) => (req) => {
    const key = typeof options.apiKey === "function" ? options.apiKey() : options.apiKey;
    if (key) req.header.set("authorization", `Bearer ${key}`);
    const extra = typeof options.headers === "function" ? options.headers() : (options.headers ?? {});
    for (const [name, value] of Object.entries(extra)) req.header.set(name, value);
    req.header.set("roz-event-format", "flat");
    return next(req);
  };
}

export function openConnection(platform: Platform, options: RozClientOptions): Connection {
  const kind = options.transport ?? platform.defaultTransport;
  const { transport, close } = platform.transport(kind, options, [headersInterceptor(options)]);
  return { kind, agent: createClient(AgentService, transport), close };
}
