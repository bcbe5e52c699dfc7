import { type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer, defaultTextMapGetter } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_URL_PATH,
} from "@opentelemetry/semantic-conventions";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Scope } from "./scope.ts";

/** Routes without a span: RPC calls (their turns are traced) and the probes an orchestrator calls every few seconds. */
function untraced(route: string | undefined): boolean {
  return (
    route !== undefined && (route.startsWith("/roz.") || route.startsWith("/grpc.") || route === "/healthz" || route === "/readyz" || route === "/metrics")
  );
}

/**
 * A server span per REST request, named `{method} {route}`, the child of the request's
 * `traceparent`; 5xx answers are errors. The request's log lines carry its ids, and its
 * handler runs with the span active (a task it starts traces its workers under it).
 */
export function traceRest(app: FastifyInstance, tracer: Tracer, scope: Scope): void {
  const propagator = new W3CTraceContextPropagator();
  const spans = new WeakMap<FastifyRequest, { span: Span; context: Context }>();
  app.addHook("onRequest", (request, reply, done) => {
    const route = request.routeOptions.url;
    if (untraced(route)) return done();
    const parent = propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter);
    const span = tracer.startSpan(
      route === undefined ? request.method : `${request.method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: request.method,
          [ATTR_URL_PATH]: request.url.split("?", 1)[0] ?? "",
          [ATTR_NETWORK_PROTOCOL_VERSION]: request.raw.httpVersion,
          [ATTR_CLIENT_ADDRESS]: request.ip,
          ...(route !== undefined ? { [ATTR_HTTP_ROUTE]: route } : {}),
        },
      },
      parent,
    );
    spans.set(request, { span, context: scope.child(parent, span) });
    scope.bind(span);
    const { traceId, spanId } = span.spanContext();
    request.log = request.log.child({ trace_id: traceId, span_id: spanId });
    reply.log = request.log;
    done();
  });
  // Callback hooks: `done` runs the handler synchronously, so the handler's async work inherits the span.
  app.addHook("preHandler", (request, _reply, done) => {
    const traced = spans.get(request);
    if (traced === undefined) return done();
    scope.run(traced.context, done);
  });
  const end = (request: FastifyRequest, status: number | undefined): void => {
    const traced = spans.get(request);
    if (traced === undefined) return;
    spans.delete(request);
    const { span } = traced;
    if (status === undefined) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: "the client went away" });
      span.setAttribute(ATTR_ERROR_TYPE, "aborted");
    } else {
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
      if (status >= 500) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute(ATTR_ERROR_TYPE, String(status));
      }
    }
    span.end();
  };
  app.addHook("onResponse", (request, reply, done) => {
    end(request, reply.statusCode);
    done();
  });
  app.addHook("onRequestAbort", (request, done) => {
    end(request, undefined);
    done();
  });
}
