import type { TurnJson } from "../api/rest.ts";
import type { Item } from "./timeline.ts";

/** The stored permission outcomes of calls that waited for an approval, as the approval's state. */
const approvalOutcomes: Record<string, "approved" | "denied" | "resolved" | undefined> = {
  approved: "approved",
  denied: "denied",
  approval_timeout: "resolved",
};

/** A stored transcript (REST `format=turns`) as view items: per turn the question, tool calls, answer and usage. */
export function transcriptItems(turns: readonly TurnJson[]): Item[] {
  const items: Item[] = [];
  for (const t of turns) {
    items.push({ kind: "user", messageId: t.message_id, text: t.user.content });
    for (const c of t.tool_calls) {
      const denied = c.permission !== "allowed" && c.permission !== "approved";
      const decided = approvalOutcomes[c.permission];
      // A call that needed the user's approval shows it, as the live view did.
      if (decided) {
        items.push({
          kind: "approval",
          id: c.id,
          toolName: c.name,
          parameters: (c.parameters ?? {}) as Record<string, never>,
          reason: "",
          timeoutMs: 0,
          receivedAt: 0,
          state: decided,
        });
      }
      items.push({
        kind: "tool",
        id: c.id,
        name: c.name,
        parameters: (c.parameters ?? {}) as Record<string, never>,
        workerId: "",
        state: denied ? "denied" : "answered",
        ...(c.success !== undefined ? { success: c.success } : {}),
        ...(c.result !== undefined || c.error !== undefined ? { result: c.result ?? c.error ?? "" } : {}),
      });
    }
    if (t.assistant.text || t.assistant.thinking)
      items.push({ kind: "assistant", messageId: t.message_id, text: t.assistant.text, thinking: t.assistant.thinking });
    if (t.error) items.push({ kind: "notice", tone: "error", text: `${t.error.code}: ${t.error.message}` });
    items.push({
      kind: "turn",
      messageId: t.message_id,
      stopReason: t.stop_reason,
      input: t.usage.input_tokens,
      output: t.usage.output_tokens,
      cacheRead: t.usage.cache_read_tokens,
      cacheCreation: t.usage.cache_creation_tokens,
    });
  }
  return items;
}

/**
 * The stream does not repeat user messages: for turns this tab did not send, put the stored
 * question (REST) before the first item of its turn.
 */
export function withUserMessages(items: readonly Item[], turns: readonly TurnJson[]): Item[] {
  if (turns.length === 0) return items as Item[];
  const questions = new Map(turns.map((t) => [t.message_id, t.user.content]));
  const seen = new Set<string>();
  const out: Item[] = [];
  for (const it of items) {
    const id = it.kind === "user" || it.kind === "assistant" || it.kind === "turn" ? it.messageId : undefined;
    if (id !== undefined && !seen.has(id)) {
      seen.add(id);
      const q = questions.get(id);
      if (it.kind !== "user" && q !== undefined) out.push({ kind: "user", messageId: id, text: q });
    }
    out.push(it);
  }
  return out;
}
