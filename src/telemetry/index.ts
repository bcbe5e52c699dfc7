/**
 * OpenTelemetry traces (session-behaviour.md §13). Without an OTLP endpoint nothing here is
 * loaded beyond this file: `startTelemetry` imports the SDK only when it is called.
 */
import type { Telemetry, TracingSettings } from "./types.ts";

export type { Telemetry, TracingSettings } from "./types.ts";

/** Loads the OpenTelemetry SDK and starts exporting spans as `settings` say. */
export async function startTelemetry(settings: TracingSettings): Promise<Telemetry> {
  const { createTelemetry } = await import("./sdk.ts");
  return createTelemetry(settings);
}
