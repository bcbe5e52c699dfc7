import { isOpenAIEndpoint } from "../content.ts";
import { idleTimeout } from "../idle-timeout.ts";
import { defaultIdleTimeoutMs, type OpenAIModelOptions } from "../openai-client.ts";
import { OpenAIModel, type OpenAIAttempt } from "../openai-model.ts";
import { toChatRequest } from "./convert.ts";
import { chatEvents } from "./stream.ts";

const attempt: OpenAIAttempt = async function* (client, request, options) {
  const body = toChatRequest(request, {
    supportsImages: options.supportsImages,
    openaiEndpoint: isOpenAIEndpoint(options.baseURL),
  });
  const stream = await client.chat.completions.create(body, { signal: request.signal });
  yield* chatEvents(idleTimeout(stream, stream.controller, options.idleTimeoutMs ?? defaultIdleTimeoutMs));
};

/**
 * A provider spoken to through the Chat Completions API (`POST {baseURL}/chat/completions`
 * with `stream: true`): OpenAI itself, or any compatible server (Ollama, vLLM, llama.cpp
 * server, LM Studio, OpenRouter, …).
 */
export class OpenAIChatModel extends OpenAIModel {
  constructor(options: OpenAIModelOptions) {
    super(options, attempt);
  }
}
