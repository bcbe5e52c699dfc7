/**
 * Our request → a Chat Completions request body. Written for the lowest common
 * denominator of OpenAI-compatible servers: plain string content where possible, no empty
 * `tools`, `max_tokens` except on OpenAI's own endpoint (whose reasoning models only take
 * `max_completion_tokens`). Thinking parts are not sent back: the Chat Completions API has
 * no field for them and some servers reject unknown ones.
 */
import type {
  ChatCompletionContentPart,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { argumentsText, imageDataURL, imagePlaceholder, joinSystem, toolResultText, type ConvertOptions } from "../content.ts";
import { pairToolResults } from "../tool-pairing.ts";
import type { ModelMessage, ModelRequest, ToolDefinition } from "../types.ts";

/**
 * The streaming request body for `request`; tool pairing is repaired first (see tool-pairing.ts).
 * On OpenAI's own endpoint the output limit is `max_completion_tokens` instead of `max_tokens`.
 */
export function toChatRequest(request: ModelRequest, options: ConvertOptions): ChatCompletionCreateParamsStreaming {
  const messages: ChatCompletionMessageParam[] = [];
  const system = joinSystem(request.system);
  if (system !== undefined) messages.push({ role: "system", content: system });
  for (const message of pairToolResults(request.messages)) {
    messages.push(...(message.role === "user" ? userMessages(message, options) : assistantMessages(message)));
  }
  const body: ChatCompletionCreateParamsStreaming = {
    model: request.model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length > 0) body.tools = request.tools.map(toChatTool);
  if (request.maxOutputTokens !== undefined) {
    if (options.openaiEndpoint) body.max_completion_tokens = request.maxOutputTokens;
    else body.max_tokens = request.maxOutputTokens;
  }
  return body;
}

function toChatTool(tool: ToolDefinition): ChatCompletionTool {
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

/** Tool results become `tool` messages (first, as the API requires); the rest one user message. */
function userMessages(message: ModelMessage, options: ConvertOptions): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  const content: ChatCompletionContentPart[] = [];
  for (const part of message.parts) {
    switch (part.type) {
      case "tool_result":
        out.push({ role: "tool", tool_call_id: part.toolUseId, content: toolResultText(part) });
        break;
      case "text":
        content.push({ type: "text", text: part.text });
        break;
      case "image":
        content.push(options.supportsImages ? { type: "image_url", image_url: { url: imageDataURL(part) } } : { type: "text", text: imagePlaceholder(part) });
        break;
      case "tool_use":
      case "thinking":
        break; // never valid in a user turn; dropped rather than rejected by the provider
    }
  }
  if (content.length > 0) {
    // Plain string content where possible: some compatible servers only accept strings.
    const textOnly = content.every((c) => c.type === "text");
    out.push({
      role: "user",
      content: textOnly ? content.map((c) => (c.type === "text" ? c.text : "")).join("\n\n") : content,
    });
  }
  return out;
}

function assistantMessages(message: ModelMessage): ChatCompletionMessageParam[] {
  const texts: string[] = [];
  const toolCalls: { id: string; type: "function"; function: { name: string; arguments: string } }[] = [];
  for (const part of message.parts) {
    if (part.type === "text") texts.push(part.text);
    else if (part.type === "image") texts.push(imagePlaceholder(part));
    else if (part.type === "tool_use") {
      toolCalls.push({ id: part.id, type: "function", function: { name: part.name, arguments: argumentsText(part.input) } });
    }
  }
  const text = texts.join("\n\n");
  if (text === "" && toolCalls.length === 0) return []; // e.g. only thinking: nothing the API can take
  return [{ role: "assistant", content: text === "" ? null : text, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) }];
}
