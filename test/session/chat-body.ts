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

/** The server's team tools, offered next to the client's own when the session has them on (§7). */
export const SERVER_TOOLS: ReadonlySet<string> = new Set(["spawn_worker", "wait_for_workers"]);

/** The client's tools among those offered, in order (the server's team tools left out). */
export const clientToolsOf = (body: any): { function: { name: string; description: string } }[] =>
  (body.tools ?? []).filter((t: { function: { name: string } }) => !SERVER_TOOLS.has(t.function.name));

/** Names of every tool offered (the client's and the server's), in order. */
export const offeredNames = (body: any): string[] => (body.tools ?? []).map((t: { function: { name: string } }) => t.function.name);

/** Names of the client tools offered, in order. */
export const toolNames = (body: any): string[] => clientToolsOf(body).map((t) => t.function.name);

/** The system message's text. */
export const systemOf = (body: any): string => String(messagesOf(body).find((m) => m.role === "system")?.content ?? "");
