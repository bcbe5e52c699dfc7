/**
 * Our request → an Anthropic Messages request body (`stream: true`).
 *
 * - System blocks become text blocks, tool results `tool_result` blocks (with `is_error`),
 *   images base64 `image` blocks (a text placeholder where the provider takes none).
 * - Thinking is sent back the way the API demands: each block unmodified with its
 *   `signature`, `redacted_thinking` as it came. A response's blocks are kept in one
 *   thinking part (see `thinkingSignature`); thinking without a signature of ours (another
 *   provider's, or typed by a client) is dropped, because the API rejects unsigned blocks.
 * - Prompt caching: `cache_control` breakpoints on the last tool, the last system block and
 *   the last block of the last two user messages (the API allows four).
 * - Tool names pass through `toolName` in one place, so a reversible mapping can be applied
 *   there (the API allows `^[a-zA-Z0-9_-]{1,64}$`).
 */
import type Anthropic from "@anthropic-ai/sdk";
import { imagePlaceholder } from "../content.ts";
import { pairToolResults } from "../tool-pairing.ts";
import type { ModelMessage, ModelPart, ModelRequest, ToolDefinition } from "../types.ts";

type Body = Anthropic.MessageCreateParamsStreaming;
type Block = Anthropic.ContentBlockParam;
type ThinkingBlock = Anthropic.ThinkingBlockParam | Anthropic.RedactedThinkingBlockParam;

/** What `toAnthropicRequest` needs to know about the provider. */
export interface AnthropicConvertOptions {
  supportsImages: boolean;
  /** Extended thinking budget in tokens; 0 or undefined: thinking off. */
  thinkingBudget?: number;
  /** `max_tokens` when the request sets no output limit (the API requires one). */
  defaultMaxTokens: number;
  /** Our tool name → the name the API sees (identity unless a mapping is installed). */
  toolName?: (name: string) => string;
}

/** Media types the API takes as base64 images. */
const imageTypes = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);
const ephemeral = { type: "ephemeral" } as const;

/** Marks a thinking part's signature that packs several (or redacted) blocks. */
const blocksPrefix = "anthropic-blocks/1:";
/** Signatures other providers put on thinking (openai-responses): never sent to Anthropic. */
const foreignPrefix = /^openai-responses\//;

/**
 * The `signature` our thinking part carries for a response's thinking blocks: the API's own
 * signature when there was exactly one signed block (the common case, readable by any
 * client), else the blocks themselves, packed. The part's `thinking` is the blocks' text.
 */
export function thinkingSignature(blocks: readonly ThinkingBlock[]): string | undefined {
  if (blocks.length === 0) return undefined;
  const only = blocks[0]!;
  if (blocks.length === 1 && only.type === "thinking") return only.signature;
  return blocksPrefix + JSON.stringify(blocks);
}

/** The thinking blocks to send back for a thinking part; [] when it has none of ours. */
export function thinkingBlocks(part: Extract<ModelPart, { type: "thinking" }>): ThinkingBlock[] {
  const signature = part.signature;
  if (!signature || foreignPrefix.test(signature)) return [];
  if (!signature.startsWith(blocksPrefix)) return [{ type: "thinking", thinking: part.thinking, signature }];
  try {
    const blocks = JSON.parse(signature.slice(blocksPrefix.length)) as unknown;
    return Array.isArray(blocks) ? blocks.filter(isThinkingBlock) : [];
  } catch {
    return []; // a damaged signature: dropping the thinking beats a rejected request
  }
}

function isThinkingBlock(b: unknown): b is ThinkingBlock {
  const block = b as { type?: unknown; thinking?: unknown; signature?: unknown; data?: unknown } | null;
  if (block?.type === "thinking") return typeof block.thinking === "string" && typeof block.signature === "string";
  return block?.type === "redacted_thinking" && typeof block.data === "string";
}

/**
 * The streaming request body for `request` (tool pairing repaired first, see
 * tool-pairing.ts); `continuation` is assistant content of this same call to continue
 * after a `pause_turn`.
 */
export function toAnthropicRequest(request: ModelRequest, options: AnthropicConvertOptions, continuation: Block[] = []): Body {
  const name = options.toolName ?? ((n: string) => n);
  const messages: Anthropic.MessageParam[] = [];
  for (const message of pairToolResults(request.messages)) {
    const content = message.role === "user" ? userBlocks(message, options) : assistantBlocks(message, name);
    if (content.length === 0) continue;
    const last = messages.at(-1);
    // The API wants alternating roles: merge what a damaged transcript left adjacent.
    if (last?.role === message.role) (last.content as Block[]).push(...content);
    else messages.push({ role: message.role, content });
  }
  if (continuation.length > 0) messages.push({ role: "assistant", content: continuation });
  cacheLastUserTurns(messages);

  const budget = options.thinkingBudget ?? 0;
  let maxTokens = request.maxOutputTokens ?? options.defaultMaxTokens;
  // The API requires budget_tokens < max_tokens.
  if (budget > 0 && maxTokens <= budget) maxTokens = budget + options.defaultMaxTokens;
  const body: Body = { model: request.model, max_tokens: maxTokens, messages, stream: true };
  const system = request.system.filter((s) => s.trim() !== "").map((text): Anthropic.TextBlockParam => ({ type: "text", text }));
  if (system.length > 0) {
    system.at(-1)!.cache_control = ephemeral;
    body.system = system;
  }
  if (request.tools.length > 0) {
    const tools = request.tools.map((t) => toTool(t, name));
    tools.at(-1)!.cache_control = ephemeral;
    body.tools = tools;
  }
  if (budget > 0) body.thinking = { type: "enabled", budget_tokens: budget };
  return body;
}

function toTool(tool: ToolDefinition, name: (n: string) => string): Anthropic.Tool {
  const schema = tool.parameters as Anthropic.Tool.InputSchema;
  return {
    name: name(tool.name),
    description: tool.description,
    input_schema: schema.type === "object" ? schema : { ...schema, type: "object" },
  };
}

function userBlocks(message: ModelMessage, options: AnthropicConvertOptions): Block[] {
  const blocks: Block[] = [];
  for (const part of message.parts) {
    switch (part.type) {
      case "tool_result":
        blocks.push({ type: "tool_result", tool_use_id: part.toolUseId, content: part.content, ...(part.isError ? { is_error: true } : {}) });
        break;
      case "text":
        if (part.text !== "") blocks.push({ type: "text", text: part.text });
        break;
      case "image":
        blocks.push(
          options.supportsImages && imageTypes.has(part.mediaType)
            ? {
                type: "image",
                source: {
                  type: "base64",
                  media_type: part.mediaType as Anthropic.Base64ImageSource["media_type"],
                  data: Buffer.from(part.data).toString("base64"),
                },
              }
            : { type: "text", text: imagePlaceholder(part) },
        );
        break;
      case "tool_use":
      case "thinking":
        break; // never valid in a user turn
    }
  }
  return blocks;
}

/** Assistant parts in their order: thinking blocks must precede the output they led to. */
function assistantBlocks(message: ModelMessage, name: (n: string) => string): Block[] {
  const blocks: Block[] = [];
  for (const part of message.parts) {
    if (part.type === "text") {
      if (part.text !== "") blocks.push({ type: "text", text: part.text });
    } else if (part.type === "image") blocks.push({ type: "text", text: imagePlaceholder(part) });
    else if (part.type === "tool_use") blocks.push({ type: "tool_use", id: part.id, name: name(part.name), input: part.input });
    else if (part.type === "thinking") blocks.push(...thinkingBlocks(part));
  }
  // A message of thinking only is not accepted; it carried no answer anyway.
  return blocks.every((b) => b.type === "thinking" || b.type === "redacted_thinking") ? [] : blocks;
}

/** Breakpoints on the last block of the last two user messages: the prefix read back next call. */
function cacheLastUserTurns(messages: Anthropic.MessageParam[]): void {
  let marked = 0;
  for (let i = messages.length - 1; i >= 0 && marked < 2; i--) {
    const message = messages[i]!;
    if (message.role !== "user") continue;
    const block = (message.content as Block[]).at(-1);
    // Every block a user message holds here (text, image, tool_result) takes a breakpoint.
    if (block) (block as Anthropic.TextBlockParam).cache_control = ephemeral;
    marked++;
  }
}
