/**
 * Request bodies of the provider under test, as Chat Completions bodies: the session
 * suites read what the model was shown (system prompt, messages, tool results, tools) in
 * one shape whichever provider they run on. An Anthropic Messages body is translated the
 * way our chat converter would have said the same thing (system blocks joined, tool
 * results as `tool` messages with errors prefixed "Error: ", tool uses as `tool_calls`).
 */

type Obj = Record<string, any>;

/** The provider the session suites run on: `ROZ_TEST_PROVIDER` (the vitest project sets it). */
export type TestProvider = "openai" | "anthropic";
export const testProvider = (): TestProvider => (process.env.ROZ_TEST_PROVIDER === "anthropic" ? "anthropic" : "openai");

/** `body` as a Chat Completions body; Chat bodies are returned as they are. */
export function asChatBody(path: string, body: any): any {
  if (path !== "/v1/messages" || typeof body !== "object" || body === null) return body;
  const messages: Obj[] = [];
  const system = Array.isArray(body.system) ? body.system.map((b: Obj) => b.text).join("\n\n") : body.system;
  if (system) messages.push({ role: "system", content: system });
  for (const message of body.messages as Obj[]) {
    const blocks: Obj[] = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
    const texts = blocks.filter((b) => b.type === "text").map((b) => b.text as string);
    if (message.role === "user") {
      for (const b of blocks.filter((b) => b.type === "tool_result")) {
        messages.push({ role: "tool", tool_call_id: b.tool_use_id, content: b.is_error ? `Error: ${b.content}` : b.content });
      }
      const images = blocks.filter((b) => b.type === "image");
      if (images.length > 0) {
        messages.push({
          role: "user",
          content: blocks.flatMap((b): Obj[] =>
            b.type === "text"
              ? [{ type: "text", text: b.text }]
              : b.type === "image"
                ? [{ type: "image_url", image_url: { url: `data:${b.source.media_type};base64,${b.source.data}` } }]
                : [],
          ),
        });
      } else if (texts.length > 0) messages.push({ role: "user", content: texts.join("\n\n") });
    } else {
      const calls = blocks
        .filter((b) => b.type === "tool_use")
        .map((b) => ({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input) } }));
      messages.push({ role: "assistant", content: texts.length > 0 ? texts.join("\n\n") : null, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
    }
  }
  const chat: Obj = { model: body.model, messages, stream: true, max_tokens: body.max_tokens };
  if (body.tools) {
    chat.tools = body.tools.map((t: Obj) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.input_schema } }));
  }
  return chat;
}
