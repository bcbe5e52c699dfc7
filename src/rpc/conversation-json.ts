import { create, type JsonValue, toJson } from "@bufbuild/protobuf";
import type { ModelPart } from "../models/index.ts";
import { conversationOf } from "../session/index.ts";
import type { StoredTurn } from "../store/index.ts";
import { ConversationMessageSchema } from "../gen/roz/v1/agent_pb.js";

const partInit = (p: ModelPart) => {
  switch (p.type) {
    case "text":
      return { part: { case: "text" as const, value: { text: p.text } } };
    case "thinking":
      return { part: { case: "thinking" as const, value: { thinking: p.thinking, signature: p.signature ?? "" } } };
    case "tool_use":
      return { part: { case: "toolUse" as const, value: { id: p.id, name: p.name, input: p.input } } };
    case "tool_result":
      return { part: { case: "toolResult" as const, value: { toolUseId: p.toolUseId, name: p.name, content: p.content, isError: p.isError } } };
    case "image":
      return { part: { case: "image" as const, value: { mediaType: p.mediaType, data: p.data } } };
  }
};

/**
 * A stored transcript as `roz.v1.ConversationMessage`s in protobuf JSON with the proto's
 * field names, snake_case like the rest of REST (`{"role":"user","parts":[{"tool_result":
 * {"tool_use_id":"…"}}]}`); protobuf JSON parsers take those names, so it is ready for
 * `StartSession.history`: the conversation `conversationOf` rebuilds from the turn records.
 */
export function conversationJson(turns: readonly StoredTurn[]): JsonValue[] {
  return conversationOf(turns).map((m) =>
    toJson(ConversationMessageSchema, create(ConversationMessageSchema, { role: m.role, parts: m.parts.map(partInit) }), { useProtoFieldName: true }),
  );
}
