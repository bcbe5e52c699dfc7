import OpenAI from "openai";
import type { RetryOptions } from "./retry.ts";

/** What both OpenAI-style adapters (`openai-chat`, `openai-responses`) are built from. */
export interface OpenAIModelOptions {
  /** Provider name reported by the adapter, e.g. `openai`, `ollama`. */
  provider: string;
  /** Sent as `Authorization: Bearer …`; local servers that need none get a placeholder. */
  apiKey?: string;
  /** Undefined means OpenAI's own endpoint. */
  baseURL?: string;
  /** Extra headers on every request (e.g. OpenRouter's `HTTP-Referer`). */
  headers?: Record<string, string>;
  /** Whether image parts are sent as images (otherwise as a text placeholder). */
  supportsImages: boolean;
  retry?: RetryOptions;
  /**
   * Longest silence tolerated from the provider, both before the response headers and
   * between two stream chunks; then the call fails with a retryable ModelError.
   */
  idleTimeoutMs?: number;
  fetch?: typeof fetch;
}

export const defaultIdleTimeoutMs = 300_000;

/**
 * An `openai` client for one provider. Its own retries are off (ours in `retry.ts` know
 * when output has started), and nothing is read from the environment implicitly: base
 * URL, key, organization and project are exactly what the configuration says.
 */
export function createOpenAIClient(options: OpenAIModelOptions): OpenAI {
  return new OpenAI({
    apiKey: options.apiKey || "unused",
    baseURL: options.baseURL ?? "https://api.openai.com/v1",
    organization: null,
    project: null,
    maxRetries: 0,
    timeout: options.idleTimeoutMs ?? defaultIdleTimeoutMs,
    ...(options.headers ? { defaultHeaders: options.headers } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
