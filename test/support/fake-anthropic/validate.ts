/**
 * The request checks the real Messages API makes that a converter can get wrong, with
 * Anthropic's wording where it matters. A request failing one is answered 400
 * (`invalid_request_error`) like the API would, so a broken transcript fails a test
 * instead of passing against a lenient fake.
 */
import { fakeSignature } from "./signature.ts";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const toolName = /^[a-zA-Z0-9_-]{1,64}$/;
const imageTypes = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);

/** An error message for an invalid Messages request, or undefined. */
export function messagesRequestProblem(body: Obj): string | undefined {
  if (typeof body.model !== "string" || body.model === "") return "model: Field required";
  if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1) return "max_tokens: Field required";
  if (body.stream !== true) return "fake-anthropic only serves stream: true";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "messages: at least one message is required";
  let breakpoints = 0;
  const countCache = (block: unknown) => void (isObj(block) && block.cache_control !== undefined && breakpoints++);

  const thinking = body.thinking as Obj | undefined;
  if (thinking !== undefined) {
    if (thinking.type !== "enabled" || !Number.isInteger(thinking.budget_tokens)) return "thinking: expected {type: 'enabled', budget_tokens}";
    if ((thinking.budget_tokens as number) < 1024) return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024";
    if ((thinking.budget_tokens as number) >= (body.max_tokens as number)) return "`max_tokens` must be greater than `thinking.budget_tokens`";
  }
  if (body.system !== undefined) {
    if (Array.isArray(body.system)) {
      for (const block of body.system) {
        if (!isObj(block) || block.type !== "text" || typeof block.text !== "string" || block.text === "")
          return "system: text content blocks must be non-empty";
        countCache(block);
      }
    } else if (typeof body.system !== "string") return "system: Input should be a valid string or list";
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return "tools: Input should be a valid list";
    for (const [i, tool] of body.tools.entries()) {
      if (!isObj(tool) || typeof tool.name !== "string" || !toolName.test(tool.name)) {
        return `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`;
      }
      if (!isObj(tool.input_schema) || tool.input_schema.type !== "object") return `tools.${i}.custom.input_schema.type: Field required`;
      countCache(tool);
    }
  }

  const messages = body.messages as unknown[];
  let open: Set<string> | undefined; // tool_use ids the next user message must answer
  for (const [i, m] of messages.entries()) {
    if (!isObj(m) || (m.role !== "user" && m.role !== "assistant")) return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (i === 0 && m.role !== "user") return 'messages: first message must use the "user" role';
    if (i > 0 && (messages[i - 1] as Obj).role === m.role)
      return `messages: roles must alternate between "user" and "assistant", but found multiple "${m.role}" roles in a row`;
    const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (!Array.isArray(content) || content.length === 0) return `messages.${i}: all messages must have non-empty content`;
    if (m.role === "user") {
      let seenOther = false;
      for (const [j, block] of content.entries()) {
        if (!isObj(block)) return `messages.${i}.content.${j}: Input should be an object`;
        countCache(block);
        if (block.type === "tool_result") {
          if (seenOther) return `messages.${i}: tool_result blocks must come first in a user message`;
          if (!open?.delete(block.tool_use_id as string)) {
            return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
          }
          if (typeof block.content !== "string" && !Array.isArray(block.content)) return `messages.${i}.content.${j}.content: Input should be a string or list`;
        } else {
          seenOther = true;
          const problem = userBlockProblem(block, `messages.${i}.content.${j}`);
          if (problem) return problem;
        }
      }
      if (open && open.size > 0) {
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${[...open].join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      }
      open = undefined;
    } else {
      open = new Set();
      for (const [j, block] of content.entries()) {
        const at = `messages.${i}.content.${j}`;
        if (!isObj(block)) return `${at}: Input should be an object`;
        countCache(block);
        if (block.type === "thinking") {
          if (typeof block.signature !== "string" || block.signature === "") return `${at}.thinking.signature: Field required`;
          if (block.signature !== fakeSignature(String(block.thinking)) && !block.signature.startsWith("test_")) {
            return `${at}: Invalid \`signature\` in \`thinking\` block`;
          }
        } else if (block.type === "redacted_thinking") {
          if (typeof block.data !== "string" || block.data === "") return `${at}.redacted_thinking.data: Field required`;
        } else if (block.type === "tool_use") {
          if (typeof block.id !== "string" || typeof block.name !== "string" || !isObj(block.input))
            return `${at}.tool_use: id, name and input (an object) are required`;
          open.add(block.id);
        } else if (block.type === "text") {
          if (typeof block.text !== "string" || block.text === "") return `${at}: text content blocks must be non-empty`;
        } else return `${at}.type: '${String(block.type)}' is not valid in an assistant message`;
      }
      // With thinking on, the assistant message the tool results answer must start with its thinking.
      const last = i === messages.length - 1 || i === messages.length - 2;
      if (thinking && last && open.size > 0 && !["thinking", "redacted_thinking"].includes((content[0] as Obj).type as string)) {
        return `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String((content[0] as Obj).type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`;
      }
      if (i === messages.length - 1) open = undefined; // a prefill / continuation: nothing to answer yet
    }
  }
  if (breakpoints > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`;
  return undefined;
}

function userBlockProblem(block: Obj, at: string): string | undefined {
  if (block.type === "text") return typeof block.text === "string" && block.text !== "" ? undefined : `${at}: text content blocks must be non-empty`;
  if (block.type === "image") {
    const source = block.source as Obj | undefined;
    if (!isObj(source) || source.type !== "base64" || typeof source.data !== "string") return `${at}.image.source: expected a base64 source`;
    if (!imageTypes.has(source.media_type as string))
      return `${at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
    return undefined;
  }
  return `${at}.type: '${String(block.type)}' is not valid in a user message`;
}
