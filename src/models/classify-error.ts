import {
  APIConnectionError as AnthropicConnectionError,
  APIConnectionTimeoutError as AnthropicConnectionTimeoutError,
  APIError as AnthropicAPIError,
} from "@anthropic-ai/sdk";
import { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";
import { ModelError } from "./model-error.ts";
import { parseRetryAfter } from "./retry-after.ts";

/** Statuses where the same request may succeed later (OpenAI's SDK retries the same set). */
const retryableStatus = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;

/** Error codes/types in a stream error payload that no retry can fix. */
const permanentCodes = /invalid|context_length|unsupported|not_found|insufficient_quota|permission|auth/i;

/** Network failures surfaced by undici/fetch (socket reset, connection refused, cut stream). */
const networkCodes = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

function isNetworkError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && networkCodes.has(code)) return true;
    if (e instanceof TypeError && /^(terminated|fetch failed)$/.test(e.message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The HTTP-like status some proxies (OpenRouter) put in a stream error payload's `code`. */
function payloadStatus(err: APIError): number | undefined {
  const code = (err.error as { code?: unknown } | undefined)?.code;
  return typeof code === "number" && code >= 400 && code < 600 ? code : undefined;
}

/**
 * A failure the provider reported inside a 200 stream (an error payload, a failed
 * response): retryable unless its code or type names a permanent failure.
 */
export function streamFailure(message: string, code: string | null | undefined, cause?: unknown): ModelError {
  const permanent = permanentCodes.test(code ?? "");
  return new ModelError(`model provider error: ${message}`, { retryable: !permanent, cause });
}

/**
 * Turns anything a provider call threw into a ModelError, deciding whether a retry may
 * help. Aborts must be filtered out before calling this (they are not provider failures).
 * Unknown errors become non-retryable so a bug is never retried into a loop.
 */
export function toModelError(err: unknown): ModelError {
  if (err instanceof ModelError) return err;
  if (err instanceof APIConnectionTimeoutError || err instanceof AnthropicConnectionTimeoutError) {
    return new ModelError("the model provider did not answer in time", { retryable: true, cause: err });
  }
  if (err instanceof APIConnectionError || err instanceof AnthropicConnectionError) {
    const detail = err.cause instanceof Error ? `: ${err.cause.message}` : "";
    return new ModelError(`could not reach the model provider${detail}`, { retryable: true, cause: err });
  }
  if (err instanceof APIError) {
    const status = err.status ?? payloadStatus(err);
    if (status !== undefined) {
      const quota = err.code === "insufficient_quota";
      return new ModelError(`model provider error: ${err.message}`, {
        retryable: retryableStatus(status) && !quota,
        status,
        retryAfterMs: parseRetryAfter(err.headers),
        cause: err,
      });
    }
    return streamFailure(err.message, `${err.code ?? ""} ${err.type ?? ""}`, err);
  }
  // Anthropic's SDK: HTTP failures only (its stream errors are read by sse.ts, as OpenAI's).
  // 529 (overloaded) is a 5xx, so retryable.
  if (err instanceof AnthropicAPIError && err.status !== undefined) {
    return new ModelError(`model provider error: ${err.message}`, {
      retryable: retryableStatus(err.status),
      status: err.status,
      retryAfterMs: parseRetryAfter(err.headers),
      cause: err,
    });
  }
  if (isNetworkError(err)) {
    return new ModelError("the connection to the model provider was lost", { retryable: true, cause: err });
  }
  if (err instanceof SyntaxError) {
    return new ModelError("the model provider sent a malformed stream", { retryable: true, cause: err });
  }
  const detail = err instanceof Error ? `: ${err.message}` : "";
  return new ModelError(`unexpected error while calling the model provider${detail}`, { retryable: false, cause: err });
}
