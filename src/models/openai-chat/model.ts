import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import type { OpenAIModelOptions } from "../openai-client.ts";
import { OpenAIModel, type OpenAIApi } from "../openai-model.ts";
import { openSse } from "../sse.ts";
import { toChatRequest } from "./convert.ts";
import { ChatChunkReader } from "./stream.ts";

const chatApi: OpenAIApi<ChatCompletionChunk> = {
  // The SDK sends the request (auth, base URL, error statuses); our parser reads the stream.
  open: (client, request, options) =>
    openSse<ChatCompletionChunk>(request.signal, (signal) => client.chat.completions.create(toChatRequest(request, options), { signal })),
  reader: () => new ChatChunkReader(),
};

/**
 * A provider spoken to through the Chat Completions API (`POST {baseURL}/chat/completions`
 * with `stream: true`): OpenAI itself, or any compatible server (Ollama, vLLM, llama.cpp
 * server, LM Studio, OpenRouter, …).
 */
export class OpenAIChatModel extends OpenAIModel<ChatCompletionChunk> {
  constructor(options: OpenAIModelOptions) {
    super(options, chatApi);
  }
}
