import type OpenAI from "openai";
import { isOpenAIEndpoint } from "../content.ts";
import { idleTimeout } from "../idle-timeout.ts";
import { createOpenAIClient, defaultIdleTimeoutMs, type OpenAIModelOptions } from "../openai-client.ts";
import { retryingStream } from "../retry.ts";
import type { ModelAdapter, ModelEvent, ModelRequest } from "../types.ts";
import { toChatRequest } from "./convert.ts";
import { chatEvents } from "./stream.ts";

/**
 * A provider spoken to through the Chat Completions API (`POST {baseURL}/chat/completions`
 * with `stream: true`): OpenAI itself, or any compatible server (Ollama, vLLM, llama.cpp
 * server, LM Studio, OpenRouter, …). One client, and so one connection pool, per provider.
 */
export class OpenAIChatModel implements ModelAdapter {
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
    const body = toChatRequest(request, {
      supportsImages: this.#options.supportsImages,
      openaiEndpoint: isOpenAIEndpoint(this.#options.baseURL),
    });
    const stream = await this.#client.chat.completions.create(body, { signal: request.signal });
    yield* chatEvents(idleTimeout(stream, stream.controller, this.#options.idleTimeoutMs ?? defaultIdleTimeoutMs));
  }
}
