import type OpenAI from "openai";
import { isOpenAIEndpoint, type ConvertOptions } from "./content.ts";
import { idleTimeout } from "./idle-timeout.ts";
import { createOpenAIClient, defaultIdleTimeoutMs, type OpenAIModelOptions } from "./openai-client.ts";
import { retryingStream, type RetryOptions } from "./retry.ts";
import type { ModelAdapter, ModelEvent, ModelRequest } from "./types.ts";

/** One OpenAI API: how a request is sent, and how its stream chunks become our events. */
export interface OpenAIApi<Chunk> {
  /** Sends the streaming request; the stream's `controller` aborts its HTTP request. */
  open(client: OpenAI, request: ModelRequest, options: ConvertOptions): Promise<AsyncIterable<Chunk> & { controller: AbortController }>;
  /** The API's chunks → our events (its `stream.ts`). */
  events(chunks: AsyncIterable<Chunk>): AsyncIterable<ModelEvent>;
}

/**
 * What both OpenAI APIs share: one client (and so one connection pool) per provider, the
 * idle timeout on every stream, and retries per `retry.ts` until the first event.
 * Subclasses name the API.
 */
export class OpenAIModel<Chunk> implements ModelAdapter {
  readonly provider: string;
  readonly #client: OpenAI;
  readonly #api: OpenAIApi<Chunk>;
  readonly #convert: ConvertOptions;
  readonly #idleTimeoutMs: number;
  readonly #retry: RetryOptions | undefined;

  constructor(options: OpenAIModelOptions, api: OpenAIApi<Chunk>) {
    this.provider = options.provider;
    this.#client = createOpenAIClient(options);
    this.#api = api;
    this.#convert = { supportsImages: options.supportsImages, openaiEndpoint: isOpenAIEndpoint(options.baseURL) };
    this.#idleTimeoutMs = options.idleTimeoutMs ?? defaultIdleTimeoutMs;
    this.#retry = options.retry;
  }

  /** See `ModelAdapter.stream`. */
  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    return retryingStream(() => this.#attempt(request), request.signal, this.#retry);
  }

  async *#attempt(request: ModelRequest): AsyncGenerator<ModelEvent, void, undefined> {
    const stream = await this.#api.open(this.#client, request, this.#convert);
    yield* this.#api.events(idleTimeout(stream, stream.controller, this.#idleTimeoutMs));
  }
}
