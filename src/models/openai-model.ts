import type OpenAI from "openai";
import { isOpenAIEndpoint, type ConvertOptions } from "./content.ts";
import { createOpenAIClient, defaultIdleTimeoutMs, type OpenAIModelOptions } from "./openai-client.ts";
import { streamOf } from "./push.ts";
import { retrying, type RetryOptions } from "./retry.ts";
import type { SseStream } from "./sse.ts";
import type { ModelAdapter, ModelEvent, ModelEventSink, ModelRequest } from "./types.ts";

/** Turns one response's payloads into our events: `read` per payload, then `end` (its `stream.ts`). */
export interface PayloadReader<Payload> {
  read(payload: Payload, sink: ModelEventSink): void;
  end(sink: ModelEventSink): void;
}

/** One OpenAI API: how a request is sent, and how its stream's payloads become our events. */
export interface OpenAIApi<Payload> {
  /** Sends the streaming request; the stream's `controller` aborts its HTTP request. */
  open(client: OpenAI, request: ModelRequest, options: ConvertOptions): Promise<SseStream<Payload>>;
  /** A reader for one response. */
  reader(): PayloadReader<Payload>;
}

/**
 * What both OpenAI APIs share: one client (and so one connection pool) per provider, the
 * idle timeout on every stream, and retries per `retry.ts` until the first event.
 * Subclasses name the API. Events are pushed (push.ts) from the SSE reader to the caller.
 */
export class OpenAIModel<Payload> implements ModelAdapter {
  readonly provider: string;
  readonly #client: OpenAI;
  readonly #api: OpenAIApi<Payload>;
  readonly #convert: ConvertOptions;
  readonly #idle: { idleMs: number };
  readonly #retry: RetryOptions;

  constructor(options: OpenAIModelOptions, api: OpenAIApi<Payload>) {
    this.provider = options.provider;
    this.#client = createOpenAIClient(options);
    this.#api = api;
    this.#convert = { supportsImages: options.supportsImages, openaiEndpoint: isOpenAIEndpoint(options.baseURL) };
    this.#idle = { idleMs: options.idleTimeoutMs ?? defaultIdleTimeoutMs };
    this.#retry = options.retry ?? {};
  }

  /** See `ModelAdapter.stream`. */
  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    return streamOf((r, sink) => this.streamTo(r, sink), request);
  }

  /** See `ModelAdapter.streamTo`. */
  streamTo(request: ModelRequest, sink: ModelEventSink): Promise<void> {
    return retrying((into) => this.#attempt(request, into), request.signal, this.#retry, sink);
  }

  async #attempt(request: ModelRequest, sink: ModelEventSink): Promise<void> {
    const stream = await this.#api.open(this.#client, request, this.#convert);
    const reader = this.#api.reader();
    await stream.read((payload) => reader.read(payload, sink), this.#idle);
    // After an abort the stream ended quietly; `end` then finds it cut, and retrying turns that into the abort.
    reader.end(sink);
  }
}
