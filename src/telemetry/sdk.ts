/**
 * The OpenTelemetry SDK of one app, loaded only when an OTLP endpoint is configured: a tracer
 * provider (not registered globally), the OTLP/HTTP exporter of the configured protocol behind
 * a batch processor, and the app's own span scope. Everything else the SDK reads itself from
 * the standard variables (headers, timeout, compression, batch and sampler settings, resource
 * attributes).
 */
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { ExportResultCode } from "@opentelemetry/core";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { traceRest } from "./http-spans.ts";
import { traceModels } from "./model-spans.ts";
import { Scope } from "./scope.ts";
import { createTracing } from "./spans.ts";
import type { Telemetry, TracingSettings } from "./types.ts";

/** How often, at most, failed exports are reported (a collector that is down fails every batch). */
const REPORT_EVERY_MS = 60_000;

/** `exporter` that tells `report` of failed batches: the first at once, then at most once a minute. */
function reporting(exporter: SpanExporter, report: ((error: unknown) => void) | undefined): SpanExporter {
  if (report === undefined) return exporter;
  let reportedAt = Number.NEGATIVE_INFINITY;
  return {
    export: (spans, done) =>
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && Date.now() - reportedAt >= REPORT_EVERY_MS) {
          reportedAt = Date.now();
          report(result.error ?? new Error("the span export failed"));
        }
        done(result);
      }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

export function createTelemetry(settings: TracingSettings): Telemetry {
  const otlp = settings.protocol === "http/json" ? new JsonExporter({ url: settings.url }) : new ProtobufExporter({ url: settings.url });
  const exporter = reporting(otlp, settings.onExportError);
  // The operator's OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES (read by envDetector) win over ours.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: settings.serviceVersion }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  const tracer = provider.getTracer("roz", settings.serviceVersion);
  const scope = new Scope();
  const { captureContent } = settings;
  return {
    tracing: createTracing(tracer, scope, captureContent),
    logIds: () => scope.logIds(),
    traceModels: (catalog) => traceModels(catalog, tracer, scope, captureContent),
    traceRest: (app) => traceRest(app, tracer, scope),
    shutdown: () => provider.shutdown(),
  };
}
