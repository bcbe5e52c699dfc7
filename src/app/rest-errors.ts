import type { Http2ServerRequest } from "node:http2";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { errorBody, httpStatusOfReason, type Reason, RozError } from "../errors/index.ts";
import { grpcPercentEncode } from "../rpc/index.ts";

/** Fastify's own error codes for bad input, mapped to our reasons (their status is the registry's). */
const fastifyErrors: Record<string, Reason> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "invalid_argument",
  FST_ERR_CTP_BODY_TOO_LARGE: "payload_too_large",
  FST_ERR_CTP_EMPTY_JSON_BODY: "invalid_argument",
  FST_ERR_CTP_INVALID_JSON_BODY: "invalid_argument",
  FST_ERR_CTP_EMPTY_TYPE: "unsupported_media_type",
  FST_ERR_CTP_INVALID_TYPE: "unsupported_media_type",
};

/**
 * Fastify's router errors (`frameworkErrors`): a bad percent-encoding in the URL is a 400, a
 * path parameter over the length limit a 414, both in the error shape of every other answer.
 * The offending URL is not echoed (it may be kilobytes long).
 */
export function frameworkErrorReply(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === "FST_ERR_MAX_PARAM_LENGTH") {
    void reply.status(414).send(errorBody("uri_too_long", "a path parameter is longer than the limit (ids are UUIDs)"));
    return;
  }
  void reply.status(400).send(errorBody("invalid_argument", error.code === "FST_ERR_BAD_URL" ? "the URL is not valid percent-encoded UTF-8" : error.message));
}

/**
 * Every REST failure becomes a JSON error with a 4xx for bad input and a 5xx only for
 * our own faults. Causes are logged, never sent.
 */
export function registerRestErrors(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | RozError | Error, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof RozError) {
      const status = httpStatusOfReason(err.reason);
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
    const reason = fe.code ? fastifyErrors[fe.code] : undefined;
    if (reason) return reply.status(httpStatusOfReason(reason)).send(errorBody(reason, fe.message));
    if (fe.statusCode !== undefined && fe.statusCode >= 400 && fe.statusCode < 500) {
      return reply.status(fe.statusCode).send(errorBody("invalid_argument", fe.message));
    }
    request.log.error({ err }, "unhandled error");
    return reply.status(500).send(errorBody("internal", "internal error"));
  });

  app.setNotFoundHandler((request, reply) => {
    const message = `no route ${request.method} ${request.url.split("?")[0]}`;
    if (sendRpcUnimplemented(request, reply, message)) return;
    void reply.status(404).send(errorBody("route_not_found", message));
  });
}

/** gRPC status UNIMPLEMENTED. */
const GRPC_UNIMPLEMENTED = "12";

/**
 * An RPC to a method this server does not have must fail the way its protocol says, not with
 * a REST 404: gRPC and gRPC-Web clients read `grpc-status` (12, UNIMPLEMENTED) from a
 * trailers-only answer with HTTP 200; Connect clients read a JSON error with HTTP 404.
 * Returns false for requests that are not RPCs.
 */
function sendRpcUnimplemented(request: FastifyRequest, reply: FastifyReply, message: string): boolean {
  const contentType = String(request.headers["content-type"] ?? "").toLowerCase();
  const grpcWeb = contentType.startsWith("application/grpc-web");
  if (grpcWeb || /^application\/grpc(\+|;|$)/.test(contentType)) {
    const headers = {
      "content-type": grpcWeb ? (contentType.split(";")[0] ?? contentType) : "application/grpc",
      "grpc-status": GRPC_UNIMPLEMENTED,
      "grpc-message": grpcPercentEncode(message),
    };
    const stream = (request.raw as unknown as Partial<Http2ServerRequest>).stream;
    if (stream) {
      // A real trailers-only answer: one HEADERS frame with END_STREAM. grpc-js ignores a
      // grpc-status in headers that are followed by an (empty) DATA frame.
      // Headers set by hooks (request id, CORS) go along.
      const set = Object.entries(reply.getHeaders()).filter((entry): entry is [string, string | number | string[]] => entry[1] !== undefined);
      reply.hijack();
      stream.respond({ ...Object.fromEntries(set), ":status": 200, ...headers }, { endStream: true });
      return true;
    }
    void reply.status(200).headers(headers).send();
    return true;
  }
  if (contentType.startsWith("application/connect+") || request.headers["connect-protocol-version"] !== undefined) {
    void reply
      .status(404)
      .header("content-type", "application/json")
      .send(JSON.stringify({ code: "unimplemented", message }));
    return true;
  }
  return false;
}
