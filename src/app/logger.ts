import type { FastifyServerOptions } from "fastify";
import type { Config } from "./config.ts";

/**
 * Pino options for Fastify: JSON lines, request ids, secrets redacted; with tracing, each line
 * written inside a span carries its `trace_id` and `span_id` (`logIds`).
 */
export function loggerOptions(config: Config, logIds?: () => Record<string, string>): FastifyServerOptions["logger"] {
  return {
    level: config.logLevel,
    redact: { paths: ["req.headers.authorization", "headers.authorization"], censor: "[redacted]" },
    ...(logIds ? { mixin: logIds } : {}),
  };
}
