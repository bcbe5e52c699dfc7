import type { ModelMessage, ModelPart } from "../models/index.ts";
import type { ContentPart, ConversationMessage } from "../gen/roz/v1/agent_pb.js";
import { json } from "./struct.ts";

/** `StartSession.history` as the session takes it. */
export interface DecodedHistory {
  /** The user and assistant messages, every ContentPart kind kept. */
  messages: ModelMessage[];
  /** The text of `system` messages, in order: it joins the system prompt. */
  system: string[];
  /** What was left out, one entry per message or part (e.g. `history[2] (role "tool")`). */
  skipped: string[];
}

function partFromWire(part: ContentPart, where: string): ModelPart | undefined {
  const p = part.part;
  switch (p.case) {
    case "text":
      return { type: "text", text: p.value.text };
    case "toolUse":
      return { type: "tool_use", id: p.value.id, name: p.value.name, input: json(p.value.input, `${where}.tool_use.input`) };
    case "toolResult":
      return {
        type: "tool_result",
        toolUseId: p.value.toolUseId,
        name: p.value.name,
        content: p.value.content,
        isError: p.value.isError,
      };
    case "thinking":
      return { type: "thinking", thinking: p.value.thinking, ...(p.value.signature ? { signature: p.value.signature } : {}) };
    case "image":
      return { type: "image", mediaType: p.value.mediaType, data: p.value.data };
    case undefined:
      return undefined;
  }
}

/**
 * Restores `StartSession.history` the way v0.2 accepted it (session-behaviour.md §1): `user`
 * and `assistant` messages (any case) are kept with every ContentPart kind; the text of
 * `system` messages joins the system prompt; messages with other roles, empty parts, non-text
 * parts of system messages and messages left without content are skipped and listed, never
 * refused.
 */
export function historyFromWire(history: readonly ConversationMessage[]): DecodedHistory {
  const out: DecodedHistory = { messages: [], system: [], skipped: [] };
  history.forEach((message, i) => {
    const role = message.role.trim().toLowerCase();
    if (role !== "user" && role !== "assistant" && role !== "system") {
      out.skipped.push(`history[${i}] (role "${message.role}")`);
      return;
    }
    const parts: ModelPart[] = [];
    message.parts.forEach((wire, j) => {
      const part = partFromWire(wire, `history[${i}].parts[${j}]`);
      if (part === undefined) out.skipped.push(`history[${i}].parts[${j}] (empty)`);
      else if (role === "system" && part.type !== "text") out.skipped.push(`history[${i}].parts[${j}] (${part.type} in a system message)`);
      else parts.push(part);
    });
    if (role === "system") {
      const text = parts.map((p) => (p.type === "text" ? p.text : "")).join("\n\n");
      if (text.trim() !== "") out.system.push(text);
      return;
    }
    if (parts.length === 0) {
      out.skipped.push(`history[${i}] (no content)`);
      return;
    }
    out.messages.push({ role, parts });
  });
  return out;
}
