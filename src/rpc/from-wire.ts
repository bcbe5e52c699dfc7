import type { JsonObject as PbJsonObject } from "@bufbuild/protobuf";
import type { ClientTool, ContextBlock, ToolCategory } from "../agent/index.ts";
import { RozError } from "../errors/index.ts";
import type { JsonObject, ModelMessage, ModelPart } from "../models/index.ts";
import type { SessionCommand } from "../session/index.ts";
import {
  type ContentPart,
  type ConversationMessage,
  type SessionRequest,
  ToolCategoryHint,
  type ToolSchema,
  type UserMessage,
} from "../gen/roz/v1/agent_pb.js";

/** Tool names providers accept (OpenAI: `^[a-zA-Z0-9_-]{1,64}$`). */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const bad = (message: string): never => {
  throw new RozError("invalid_argument", message);
};

const categories: Record<number, ToolCategory> = {
  [ToolCategoryHint.TOOL_CATEGORY_UNSPECIFIED]: "unspecified",
  [ToolCategoryHint.TOOL_CATEGORY_PHYSICAL]: "physical",
  [ToolCategoryHint.TOOL_CATEGORY_PURE]: "pure",
};

/** A protobuf `Struct` decodes to a JSON object; absent means `{}`. */
const json = (value: PbJsonObject | undefined): JsonObject => (value ?? {}) as JsonObject;

export function toolsFromWire(tools: ToolSchema[], field: string): ClientTool[] {
  const seen = new Set<string>();
  return tools.map((tool, i) => {
    if (!TOOL_NAME.test(tool.name)) bad(`${field}[${i}].name "${tool.name}" must match ${TOOL_NAME.source}`);
    if (seen.has(tool.name)) bad(`${field}[${i}].name "${tool.name}" is listed twice`);
    seen.add(tool.name);
    const schema = json(tool.parametersSchema);
    if (schema["type"] !== undefined && schema["type"] !== "object") bad(`${field}[${i}].parameters_schema must describe an object`);
    return {
      name: tool.name,
      description: tool.description,
      parametersSchema: Object.keys(schema).length === 0 ? { type: "object", properties: {} } : schema,
      timeoutMs: tool.timeoutMs,
      category: categories[tool.category] ?? "unspecified",
    };
  });
}

function partFromWire(part: ContentPart, where: string): ModelPart {
  const p = part.part;
  switch (p.case) {
    case "text":
      return { type: "text", text: p.value.text };
    case "toolUse":
      return { type: "tool_use", id: p.value.id, name: p.value.name, input: json(p.value.input) };
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
      return bad(`${where} has no content`);
  }
}

/** Restores `StartSession.history`; every ContentPart kind is kept. */
export function historyFromWire(history: ConversationMessage[]): ModelMessage[] {
  return history.map((message, i) => {
    const role = message.role.toLowerCase();
    if (role !== "user" && role !== "assistant") bad(`history[${i}].role must be "user" or "assistant", got "${message.role}"`);
    return { role: role as "user" | "assistant", parts: message.parts.map((part, j) => partFromWire(part, `history[${i}].parts[${j}]`)) };
  });
}

function contextFromWire(message: UserMessage): ContextBlock[] {
  return message.context.map((block, i): ContextBlock => {
    const label = block.label !== undefined && block.label !== "" ? { label: block.label } : {};
    switch (block.block.case) {
      case "text":
        return { ...label, text: block.block.value };
      case "binary":
        return { ...label, mimeType: block.block.value.mimeType || "application/octet-stream", data: block.block.value.data };
      case undefined:
        return bad(`context[${i}] has neither text nor binary`);
    }
  });
}

/** Decodes one request; throws `invalid_argument` RozErrors naming the field. */
export function commandFromWire(request: SessionRequest): SessionCommand {
  const r = request.request;
  switch (r.case) {
    case "start": {
      const s = r.value;
      return {
        type: "start",
        environmentId: s.environmentId,
        ...(s.hostId ? { hostId: s.hostId } : {}),
        ...(s.model ? { model: s.model } : {}),
        tools: toolsFromWire(s.tools, "start.tools"),
        history: historyFromWire(s.history),
        projectContext: s.projectContext,
        ...(s.maxContextTokens ? { maxContextTokens: s.maxContextTokens } : {}),
      };
    }
    case "userMessage": {
      const m = r.value;
      return {
        type: "user_message",
        content: m.content,
        context: contextFromWire(m),
        ...(m.messageId ? { messageId: m.messageId } : {}),
        ...(m.aiMode !== undefined ? { aiMode: m.aiMode } : {}),
        ...(m.tools.length > 0 ? { tools: toolsFromWire(m.tools, "user_message.tools") } : {}),
        ...(m.systemContext !== undefined ? { systemContext: m.systemContext } : {}),
      };
    }
    case "toolResult": {
      const t = r.value;
      return {
        type: "tool_result",
        toolCallId: t.toolCallId,
        outcome: {
          success: t.success,
          result: t.result,
          truncated: t.truncated,
          ...(t.exitCode !== undefined ? { exitCode: t.exitCode } : {}),
          ...(t.durationMs !== undefined ? { durationMs: Number(t.durationMs) } : {}),
        },
      };
    }
    case "cancelTurn":
      return { type: "cancel_turn", reason: r.value.reason };
    case "cancelSession":
      return { type: "cancel_session", reason: r.value.reason };
    case "ping":
      return { type: "ping" };
    case "feedback":
      return { type: "feedback", sessionId: r.value.sessionId, messageId: r.value.messageId, rating: r.value.rating };
    case "permissionDecision":
      return { type: "permission_decision", toolCallId: r.value.toolCallId, approved: r.value.approved };
    case "registerTools":
      return {
        type: "register_tools",
        ...(r.value.source ? { source: r.value.source } : {}),
        tools: toolsFromWire(r.value.tools, "register_tools.tools"),
        ...(r.value.systemContext !== undefined ? { systemContext: r.value.systemContext } : {}),
      };
    case "resume": {
      const { sessionId, afterSeq } = r.value;
      if (afterSeq !== undefined && afterSeq > BigInt(Number.MAX_SAFE_INTEGER)) bad(`resume.after_seq ${afterSeq} is out of range`);
      return { type: "resume", sessionId, ...(afterSeq !== undefined ? { afterSeq: Number(afterSeq) } : {}) };
    }
    case "webrtcAnswer":
    case "iceCandidate":
    case "cameraRequest":
      return { type: "unsupported", name: r.case };
    case undefined:
      return { type: "unsupported", name: "empty" };
  }
}
