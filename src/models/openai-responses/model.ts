import type OpenAI from "openai";
import { isOpenAIEndpoint } from "../content.ts";
import { idleTimeout } from "../idle-timeout.ts";
import { createOpenAIClient, defaultIdleTimeoutMs, type OpenAIModelOptions } from "../openai-client.ts";
import { retryingStream } from "../retry.ts";
import type { ModelAdapter, ModelEvent, ModelRequest } from "../types.ts";
import { toResponsesRequest } from "./convert.ts";
import { responsesEvents } from "./stream.ts";

/**
 * A provider spoken to through the Responses API (`POST {baseURL}/responses` with
 * `stream: true`, `store: false`): OpenAI's default, and servers that implement it
 * (vLLM, Ollama, …). One client, and so one connection pool, per provider.
 */
export class OpenAIResponsesModel implements ModelAdapter {
  readonly provider: string;
  readonly #client: OpenAI;
  readonly #options: OpenAIModelOptions;

  constructor(options: OpenAIModelOptions) {
    this.provider = options.provider;
    this.#options = options;
    this.#client = createOpenAIClient(options);
  }

  /** See `ModelAdapter.stream`; retried per `retry.ts` until the first event. */
  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    return retryingStream(() => this.#attempt(request), request.signal, this.#options.retry);
  }

  async *#attempt(request: ModelRequest): AsyncGenerator<ModelEvent, void, undefined> {
    const body = toResponsesRequest(request, {
      supportsImages: this.#options.supportsImages,
      openaiEndpoint: isOpenAIEndpoint(this.#options.baseURL),
    });
    const stream = await this.#client.responses.create(body, { signal: request.signal });
    yield* responsesEvents(idleTimeout(stream, stream.controller, this.#options.idleTimeoutMs ?? defaultIdleTimeoutMs));
  }
}
