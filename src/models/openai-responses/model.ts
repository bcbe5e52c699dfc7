import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import type { OpenAIModelOptions } from "../openai-client.ts";
import { OpenAIModel, type OpenAIApi } from "../openai-model.ts";
import { openSse } from "../sse.ts";
import { toResponsesRequest } from "./convert.ts";
import { ResponsesEventReader } from "./stream.ts";

const responsesApi: OpenAIApi<ResponseStreamEvent> = {
  // The SDK sends the request (auth, base URL, error statuses); our parser reads the stream.
  open: (client, request, options) =>
    openSse<ResponseStreamEvent>(request.signal, (signal) => client.responses.create(toResponsesRequest(request, options), { signal })),
  reader: () => new ResponsesEventReader(),
};

/**
 * A provider spoken to through the Responses API (`POST {baseURL}/responses` with
 * `stream: true`, `store: false`): OpenAI's default, and servers that implement it
 * (vLLM, Ollama, …).
 */
export class OpenAIResponsesModel extends OpenAIModel<ResponseStreamEvent> {
  constructor(options: OpenAIModelOptions) {
    super(options, responsesApi);
  }
}
