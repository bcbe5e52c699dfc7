import { RozError } from "../errors/index.ts";

/**
 * A provider failure. `retryable` says whether trying again later may help (429, 5xx,
 * network); `status` is the HTTP status where there was one; `retryAfterMs` is the wait
 * the provider asked for (`retry-after` / `retry-after-ms`), where it said.
 */
export class ModelError extends RozError {
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options: { retryable: boolean; status?: number; retryAfterMs?: number; cause?: unknown }) {
    super("model_error", message, { retryable: options.retryable, cause: options.cause });
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}
