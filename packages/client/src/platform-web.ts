import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { RozError } from "./errors.ts";
import type { Platform } from "./platform.ts";

/** Browsers: fetch has no streaming request bodies, so sessions use the AttachSession + SendToSession pair. */
export const webPlatform: Platform = {
  defaultTransport: "connect",
  transport(kind, options, interceptors) {
    const baseUrl = options.baseUrl;
    if (kind === "grpc") throw new RozError("unsupported_transport", 'transport "grpc" needs HTTP/2 streams: in browsers use "connect" or "grpc-web"');
    const transport =
      kind === "connect"
        ? createConnectTransport({ baseUrl, interceptors, useBinaryFormat: !options.jsonFormat })
        : createGrpcWebTransport({ baseUrl, interceptors });
    return { transport, close: () => undefined };
  },
};
