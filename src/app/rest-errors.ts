import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { httpStatusOf, RozError } from "../errors/index.ts";

/** The JSON body of every REST error: `{"error":{"code","message","details?"}}`. */
export function errorBody(code: string, message: string, details?: Record<string, unknown>) {
  return { error: { code, message, ...(details ? { details } : {}) } };
}

/** Fastify's own error codes for bad input, mapped to our reasons and statuses. */
const fastifyErrors: Record<string, { status: number; code: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: "unsupported_media_type" },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: "invalid_argument" },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: "payload_too_large" },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: "invalid_argument" },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: "invalid_argument" },
  FST_ERR_CTP_EMPTY_TYPE: { status: 415, code: "unsupported_media_type" },
  FST_ERR_CTP_INVALID_TYPE: { status: 415, code: "unsupported_media_type" },
};

/** Reasons whose HTTP status is more precise than their code's. */
const statusOverrides: Partial<Record<string, number>> = {
  message_too_large: 413,
  payload_too_large: 413,
  unsupported_media_type: 415,
  // A well-formed request naming a model this server does not offer.
  model_unavailable: 422,
};

/**
 * Every REST failure becomes a JSON error with a 4xx for bad input and a 5xx only for
 * our own faults. Causes are logged, never sent.
 */
export function registerRestErrors(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | RozError | Error, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof RozError) {
      const status = statusOverrides[err.reason] ?? httpStatusOf[err.code];
      if (status >= 500) request.log.error({ err }, "request failed");
      if (err.reason === "rate_limited" && err.details?.["retry_after_seconds"] !== undefined) {
        void reply.header("retry-after", String(err.details["retry_after_seconds"]));
      }
      if (err.reason === "unauthenticated") void reply.header("www-authenticate", 'Bearer realm="roz"');
      return reply.status(status).send(errorBody(err.reason, err.message, err.details));
    }
    const fe = err as FastifyError;
    if (fe.validation) {
      const first = fe.validation[0];
      const where = fe.validationContext ?? "body";
      const path = first?.instancePath ? first.instancePath.replace(/^\//, "").replaceAll("/", ".") : "";
      const missing = (first?.params as { missingProperty?: string } | undefined)?.missingProperty;
      const extra = (first?.params as { additionalProperty?: string } | undefined)?.additionalProperty;
      const field = [where, path, missing ?? extra].filter(Boolean).join(".");
      const message = extra ? `${field}: unknown field` : `${field}: ${first?.message ?? "invalid"}`;
      return reply.status(400).send(errorBody("invalid_argument", message, { field, errors: fe.validation.map((v) => v.message) }));
    }
    const mapped = fe.code ? fastifyErrors[fe.code] : undefined;
    if (mapped) return reply.status(mapped.status).send(errorBody(mapped.code, fe.message));
    if (fe.statusCode !== undefined && fe.statusCode >= 400 && fe.statusCode < 500) {
      return reply.status(fe.statusCode).send(errorBody("invalid_argument", fe.message));
    }
    request.log.error({ err }, "unhandled error");
    return reply.status(500).send(errorBody("internal", "internal error"));
  });

  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send(errorBody("route_not_found", `no route ${request.method} ${request.url.split("?")[0]}`));
  });
}
