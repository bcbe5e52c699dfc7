import type OpenAI from "openai";
import { createOpenAIClient, type OpenAIModelOptions } from "./openai-client.ts";
import { retryingStream } from "./retry.ts";
import type { ModelAdapter, ModelEvent, ModelRequest } from "./types.ts";

/** One attempt of one API: request → events, on the provider's client. */
export type OpenAIAttempt = (client: OpenAI, request: ModelRequest, options: OpenAIModelOptions) => AsyncIterable<ModelEvent>;

/**
 * What both OpenAI APIs share: one client (and so one connection pool) per provider, and
 * retries per `retry.ts` until the first event. Subclasses name the API's attempt.
 */
export class OpenAIModel implements ModelAdapter {
  readonly provider: string;
  readonly #client: OpenAI;
  readonly #options: OpenAIModelOptions;
  readonly #attempt: OpenAIAttempt;

  constructor(options: OpenAIModelOptions, attempt: OpenAIAttempt) {
    this.provider = options.provider;
    this.#options = options;
    this.#client = createOpenAIClient(options);
    this.#attempt = attempt;
  }

  /** See `ModelAdapter.stream`. */
  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    return retryingStream(() => this.#attempt(this.#client, request, this.#options), request.signal, this.#options.retry);
  }
}
