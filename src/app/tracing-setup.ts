import type { FastifyBaseLogger } from "fastify";
import { type AgentOptions, createAgent } from "../agent/index.ts";
import { startTelemetry, type Telemetry, type TracingSettings } from "../telemetry/index.ts";
import type { Config } from "./config.ts";
import type { Lifecycle } from "./lifecycle.ts";
import { SERVER_VERSION } from "./version.ts";

/** Where spans go under the standard OTLP variables; undefined when no endpoint is set (or OTEL_SDK_DISABLED). */
export function tracingSettingsOf(config: Config): Omit<TracingSettings, "onExportError"> | undefined {
  if (config.otelSdkDisabled) return undefined;
  // As the SDK does: the traces endpoint as given, the general one (its trailing slash dropped) with the signal's path.
  const url = config.otlpTracesEndpoint ?? (config.otlpEndpoint && `${config.otlpEndpoint}/v1/traces`);
  if (!url) return undefined;
  return {
    url,
    protocol: config.otlpTracesProtocol ?? config.otlpProtocol,
    serviceName: config.otelServiceName,
    serviceVersion: SERVER_VERSION,
    captureContent: config.otelCaptureContent,
  };
}

/**
 * Starts tracing when an endpoint is configured (loading the OpenTelemetry SDK only then);
 * its spans are flushed as the app's last shutdown step. Failed exports are logged, at most once a minute.
 */
export async function startTracing(config: Config, lifecycle: Lifecycle, log: () => FastifyBaseLogger): Promise<Telemetry | undefined> {
  const settings = tracingSettingsOf(config);
  if (settings === undefined) return undefined;
  const telemetry = await startTelemetry({ ...settings, onExportError: (err) => log().warn({ err, url: settings.url }, "could not export spans") });
  lifecycle.onClose("traces", () => telemetry.shutdown());
  return telemetry;
}

/** The agent factory of sessions and workers: with tracing, their tool calls are spans. */
export function agentFactory(telemetry: Telemetry | undefined): typeof createAgent {
  if (telemetry === undefined) return createAgent;
  const { tracing } = telemetry;
  return (options: AgentOptions) => createAgent({ ...options, tracing });
}
