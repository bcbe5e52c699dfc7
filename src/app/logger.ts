import type { FastifyServerOptions } from "fastify";
import type { Config } from "./config.ts";

/** Pino options for Fastify: JSON lines, request ids, secrets redacted. */
export function loggerOptions(config: Config): FastifyServerOptions["logger"] {
  return {
    level: config.logLevel,
    redact: { paths: ["req.headers.authorization", "headers.authorization"], censor: "[redacted]" },
  };
}
