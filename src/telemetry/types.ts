import type { FastifyInstance } from "fastify";
import type { Tracing } from "../domain/index.ts";
import type { ModelCatalog } from "../models/index.ts";

/** What tracing is configured with (from the standard `OTEL_*` variables, see src/app/config.ts). */
export interface TracingSettings {
  /** Where spans are sent (OTLP/HTTP), e.g. `http://collector:4318/v1/traces`. */
  url: string;
  protocol: "http/protobuf" | "http/json";
  /** `service.name` of the resource. */
  serviceName: string;
  serviceVersion: string;
  /** Prompts, completions, tool arguments and results are recorded on spans (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`). */
  captureContent: boolean;
  /** Told when a batch of spans could not be exported (at most once a minute). */
  onExportError?: (error: unknown) => void;
}

/** Tracing of one app: the spans the layers start, and the hooks `src/app` wires. */
export interface Telemetry {
  readonly tracing: Tracing;
  /** `trace_id` and `span_id` of the active span, for a log line (empty outside spans): the logger's mixin. */
  logIds(): Record<string, string>;
  /** The same catalog whose every model call is a `chat {model}` span under the active span. */
  traceModels(catalog: ModelCatalog): ModelCatalog;
  /** A server span per REST request (not RPC calls, not probes), child of its `traceparent`. */
  traceRest(app: FastifyInstance): void;
  /** Exports the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}
