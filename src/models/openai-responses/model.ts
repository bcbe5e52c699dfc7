import { isOpenAIEndpoint } from "../content.ts";
import { idleTimeout } from "../idle-timeout.ts";
import { defaultIdleTimeoutMs, type OpenAIModelOptions } from "../openai-client.ts";
import { OpenAIModel, type OpenAIAttempt } from "../openai-model.ts";
import { toResponsesRequest } from "./convert.ts";
import { responsesEvents } from "./stream.ts";

const attempt: OpenAIAttempt = async function* (client, request, options) {
  const body = toResponsesRequest(request, {
    supportsImages: options.supportsImages,
    openaiEndpoint: isOpenAIEndpoint(options.baseURL),
  });
  const stream = await client.responses.create(body, { signal: request.signal });
  yield* responsesEvents(idleTimeout(stream, stream.controller, options.idleTimeoutMs ?? defaultIdleTimeoutMs));
};

/**
 * A provider spoken to through the Responses API (`POST {baseURL}/responses` with
 * `stream: true`, `store: false`): OpenAI's default, and servers that implement it
 * (vLLM, Ollama, …).
 */
export class OpenAIResponsesModel extends OpenAIModel {
  constructor(options: OpenAIModelOptions) {
    super(options, attempt);
  }
}
