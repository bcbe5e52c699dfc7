/**
 * Our request → a Responses request body, stateless (`store: false`, the whole transcript
 * as `input`). Reasoning is carried across turns the stateless way: a reasoning item's
 * encrypted content comes back to us as the `signature` of its thinking (see
 * `reasoningSignature`) and is sent back as a `reasoning` input item; thinking without
 * such a signature (another provider's, or a summary only) is dropped.
 */
import type { FunctionTool, ResponseCreateParamsStreaming, ResponseInputContent, ResponseInputItem } from "openai/resources/responses/responses";
import { argumentsText, imageDataURL, imagePlaceholder, joinSystem, toolResultText, type ConvertOptions } from "../content.ts";
import { pairToolResults } from "../tool-pairing.ts";
import type { ModelMessage, ModelPart, ModelRequest, ToolDefinition } from "../types.ts";

const signaturePrefix = "openai-responses/1:";

/** Packs a reasoning item's id and encrypted content into a thinking `signature`. */
export function reasoningSignature(id: string, encryptedContent: string): string {
  return `${signaturePrefix}${id}:${encryptedContent}`;
}

/** The reverse of `reasoningSignature`; undefined for any other signature. */
export function parseReasoningSignature(signature: string | undefined): { id: string; encryptedContent: string } | undefined {
  if (!signature?.startsWith(signaturePrefix)) return undefined;
  const rest = signature.slice(signaturePrefix.length);
  const colon = rest.indexOf(":");
  if (colon <= 0) return undefined;
  return { id: rest.slice(0, colon), encryptedContent: rest.slice(colon + 1) };
}

/**
 * Models on OpenAI's endpoint that reason (o-series, gpt-5 family except its `-chat`
 * variants, codex): only they accept the `reasoning` parameter.
 */
export function isReasoningModel(model: string): boolean {
  return /^(o\d|gpt-5|codex)/i.test(model) && !/-chat/i.test(model);
}

/**
 * The streaming request body for `request`; tool pairing is repaired first (see tool-pairing.ts).
 * On OpenAI's own endpoint reasoning models are asked for summaries and encrypted reasoning.
 */
export function toResponsesRequest(request: ModelRequest, options: ConvertOptions): ResponseCreateParamsStreaming {
  const input: ResponseInputItem[] = [];
  for (const message of pairToolResults(request.messages)) {
    input.push(...(message.role === "user" ? userItems(message, options) : assistantItems(message)));
  }
  const body: ResponseCreateParamsStreaming = { model: request.model, input, stream: true, store: false };
  const instructions = joinSystem(request.system);
  if (instructions !== undefined) body.instructions = instructions;
  if (request.tools.length > 0) body.tools = request.tools.map(toFunctionTool);
  if (request.maxOutputTokens !== undefined) body.max_output_tokens = request.maxOutputTokens;
  if (options.openaiEndpoint && isReasoningModel(request.model)) {
    body.reasoning = { summary: "auto" };
    body.include = ["reasoning.encrypted_content"];
  }
  return body;
}

function toFunctionTool(tool: ToolDefinition): FunctionTool {
  // strict: false — strict mode demands schemas (all properties required, no extras) that
  // client-declared tools rarely satisfy.
  return { type: "function", name: tool.name, description: tool.description, parameters: tool.parameters, strict: false };
}

function userItems(message: ModelMessage, options: ConvertOptions): ResponseInputItem[] {
  const items: ResponseInputItem[] = [];
  const content: ResponseInputContent[] = [];
  for (const part of message.parts) {
    switch (part.type) {
      case "tool_result":
        items.push({ type: "function_call_output", call_id: part.toolUseId, output: toolResultText(part) });
        break;
      case "text":
        content.push({ type: "input_text", text: part.text });
        break;
      case "image":
        content.push(
          options.supportsImages
            ? { type: "input_image", image_url: imageDataURL(part), detail: "auto" }
            : { type: "input_text", text: imagePlaceholder(part) },
        );
        break;
      case "tool_use":
      case "thinking":
        break; // never valid in a user turn
    }
  }
  if (content.length > 0) items.push({ type: "message", role: "user", content });
  return items;
}

/** Assistant parts in their order: reasoning items must precede the output they led to. */
function assistantItems(message: ModelMessage): ResponseInputItem[] {
  const items: ResponseInputItem[] = [];
  let text: string[] = [];
  const flushText = () => {
    if (text.length > 0) items.push({ type: "message", role: "assistant", content: text.join("\n\n") });
    text = [];
  };
  for (const part of message.parts) {
    if (part.type === "text") text.push(part.text);
    else if (part.type === "image") text.push(imagePlaceholder(part));
    else if (part.type === "tool_use" || part.type === "thinking") {
      flushText();
      const item = part.type === "tool_use" ? functionCall(part) : reasoningItem(part);
      if (item) items.push(item);
    }
  }
  flushText();
  return items;
}

function functionCall(part: Extract<ModelPart, { type: "tool_use" }>): ResponseInputItem {
  return { type: "function_call", call_id: part.id, name: part.name, arguments: argumentsText(part.input) };
}

function reasoningItem(part: Extract<ModelPart, { type: "thinking" }>): ResponseInputItem | undefined {
  const saved = parseReasoningSignature(part.signature);
  if (!saved) return undefined;
  return {
    type: "reasoning",
    id: saved.id,
    summary: part.thinking === "" ? [] : [{ type: "summary_text", text: part.thinking }],
    encrypted_content: saved.encryptedContent,
  };
}
