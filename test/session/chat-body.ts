/**
 * Reading Chat Completions request bodies as the fake provider recorded them: what the
 * model was shown (messages, tool results, tools, system prompt).
 */

/** A Chat Completions message as sent to the provider. */
export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_call_id?: string;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
}

export const messagesOf = (body: any): ChatMessage[] => body.messages;

/** The `tool` messages (tool results), in order. */
export const toolMessages = (body: any): ChatMessage[] => messagesOf(body).filter((m) => m.role === "tool");

/** Names of the tools offered, in order. */
export const toolNames = (body: any): string[] => (body.tools ?? []).map((t: { function: { name: string } }) => t.function.name);

/** The system message's text. */
export const systemOf = (body: any): string => String(messagesOf(body).find((m) => m.role === "system")?.content ?? "");
