import { Agent } from "node:http";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { Platform } from "./platform.ts";

/** A dead HTTP/2 connection (no RST, no FIN) is noticed by a PING left unanswered this long after this much silence. */
const PING_INTERVAL_MS = 15_000;
const PING_TIMEOUT_MS = 10_000;

/**
 * Node: `grpc` (the default) over HTTP/2; `connect` and `grpc-web` over HTTP/1.1 (or HTTP/2
 * with `httpVersion: "2"`). Each client owns its connections, so `close()` lets the process exit.
 */
export const nodePlatform: Platform = {
  defaultTransport: "grpc",
  transport(kind, options, interceptors) {
    const baseUrl = options.baseUrl;
    if (kind === "grpc" || options.httpVersion === "2") {
      const sessionManager = new Http2SessionManager(baseUrl, { pingIntervalMs: PING_INTERVAL_MS, pingTimeoutMs: PING_TIMEOUT_MS });
      const common = { baseUrl, interceptors, sessionManager, httpVersion: "2" as const };
      const transport =
        kind === "grpc"
          ? createGrpcTransport(common)
          : kind === "connect"
            ? createConnectTransport({ ...common, useBinaryFormat: !options.jsonFormat })
            : createGrpcWebTransport(common);
      return { transport, close: () => sessionManager.abort() };
    }
    const agent = new Agent({ keepAlive: true });
    const common = { baseUrl, interceptors, httpVersion: "1.1" as const, nodeOptions: { agent } };
    const transport = kind === "connect" ? createConnectTransport({ ...common, useBinaryFormat: !options.jsonFormat }) : createGrpcWebTransport(common);
    return { transport, close: () => agent.destroy() };
  },
};
