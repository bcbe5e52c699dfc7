import type { FastifyRequest, FastifyServerOptions } from "fastify";
import { OAUTH_CALLBACK_PATH } from "../mcp/index.ts";
import type { Config } from "./config.ts";
import { readableLog } from "./log-format.ts";

/**
 * A request URL as logs show it: the OAuth callback's query (an authorization code and the
 * state that redeems it) is left out.
 */
export function loggableUrl(url: string): string {
  return url.startsWith(`${OAUTH_CALLBACK_PATH}?`) ? `${OAUTH_CALLBACK_PATH}?[redacted]` : url;
}

/**
 * Pino options for Fastify: JSON lines (or readable ones with `ROZ_LOG_FORMAT=pretty`),
 * request ids, secrets redacted; with tracing, each line written inside a span carries its
 * `trace_id` and `span_id` (`logIds`).
 */
export function loggerOptions(config: Pick<Config, "logLevel" | "logFormat">, logIds?: () => Record<string, string>): FastifyServerOptions["logger"] {
  return {
    level: config.logLevel,
    redact: { paths: ["req.headers.authorization", "headers.authorization"], censor: "[redacted]" },
    serializers: {
      // Fastify's own request fields, with the URL made loggable.
      req: (req: FastifyRequest) => ({
        method: req.method,
        url: loggableUrl(req.url),
        host: req.host,
        remoteAddress: req.ip,
        remotePort: req.socket?.remotePort,
      }),
    },
    ...(logIds ? { mixin: logIds } : {}),
    ...(config.logFormat === "pretty" ? { stream: readableLog() } : {}),
  };
}
