import type { ClientTool, ContextBlock, ToolCategory } from "../agent/index.ts";
import { type Budget, metadataProblem, titleProblem } from "../domain/index.ts";
import { RozError } from "../errors/index.ts";
import type { SessionCommand } from "../session/index.ts";
import { historyFromWire } from "./history-from-wire.ts";
import { json } from "./struct.ts";
import { InputDelivery, type SessionRequest, ToolCategoryHint, type ToolSchema, type UserMessage } from "../gen/roz/v1/agent_pb.js";

const bad = (message: string): never => {
  throw new RozError("invalid_argument", message);
};

const deliveries: Record<number, "queue" | "steer" | "interrupt" | undefined> = {
  [InputDelivery.UNSPECIFIED]: undefined,
  [InputDelivery.QUEUE]: "queue",
  [InputDelivery.STEER]: "steer",
  [InputDelivery.INTERRUPT]: "interrupt",
};

function deliveryFromWire(value: InputDelivery): "queue" | "steer" | "interrupt" | undefined {
  if (!(value in deliveries)) bad(`user_message.delivery ${value} is not a known InputDelivery`);
  return deliveries[value];
}

const categories: Record<number, ToolCategory> = {
  [ToolCategoryHint.TOOL_CATEGORY_UNSPECIFIED]: "unspecified",
  [ToolCategoryHint.TOOL_CATEGORY_PHYSICAL]: "physical",
  [ToolCategoryHint.TOOL_CATEGORY_PURE]: "pure",
};

/**
 * Decodes a tool list. Any name is accepted (names a provider refuses are mapped for it in
 * `src/models`), and a name listed twice is kept once: the last one wins, as in v0.2.
 * Only a schema that does not describe an object is refused.
 */
export function toolsFromWire(tools: ToolSchema[], field: string): ClientTool[] {
  const byName = new Map<string, ClientTool>();
  tools.forEach((tool, i) => {
    byName.delete(tool.name);
    byName.set(tool.name, toolFromWire(tool, `${field}[${i}]`));
  });
  return [...byName.values()];
}

function toolFromWire(tool: ToolSchema, where: string): ClientTool {
  const schema = json(tool.parametersSchema, `${where}.parameters_schema`);
  if (schema["type"] !== undefined && schema["type"] !== "object") bad(`${where}.parameters_schema must describe an object`);
  return {
    name: tool.name,
    description: tool.description,
    parametersSchema: Object.keys(schema).length === 0 ? { type: "object", properties: {} } : schema,
    timeoutMs: tool.timeoutMs,
    category: categories[tool.category] ?? "unspecified",
  };
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

/** `start.title` and `start.metadata` when given; an empty title is no title. */
function labelsFromWire(start: { title?: string | undefined; metadata: { [key: string]: string } }): { title?: string; metadata?: Record<string, string> } {
  const problem = (start.title !== undefined ? titleProblem(start.title, "start.title") : undefined) ?? metadataProblem(start.metadata, "start.metadata");
  if (problem !== undefined) bad(problem);
  return {
    ...(start.title ? { title: start.title } : {}),
    ...(Object.keys(start.metadata).length > 0 ? { metadata: { ...start.metadata } } : {}),
  };
}

/** `start.budget` when it sets a limit; a negative or non-finite cost is refused. */
function budgetFromWire(budget: { maxTokens?: bigint | undefined; maxCostUsd?: number | undefined } | undefined): { budget?: Budget } {
  if (budget === undefined) return {};
  const { maxTokens, maxCostUsd } = budget;
  if (maxCostUsd !== undefined && !(Number.isFinite(maxCostUsd) && maxCostUsd >= 0)) bad("start.budget.max_cost_usd must be a number of USD, 0 or more");
  const limits: Budget = {
    ...(maxTokens !== undefined ? { maxTokens: Number(maxTokens > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : maxTokens) } : {}),
    ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
  };
  return Object.keys(limits).length > 0 ? { budget: limits } : {};
}

/** Decodes one request; throws `invalid_argument` RozErrors naming the field. */
export function commandFromWire(request: SessionRequest): SessionCommand {
  const r = request.request;
  switch (r.case) {
    case "start": {
      const s = r.value;
      const history = historyFromWire(s.history);
      return {
        type: "start",
        environmentId: s.environmentId,
        ...(s.hostId ? { hostId: s.hostId } : {}),
        ...(s.model ? { model: s.model } : {}),
        ...labelsFromWire(s),
        ...budgetFromWire(s.budget),
        tools: toolsFromWire(s.tools, "start.tools"),
        history: history.messages,
        systemPrompt: history.system,
        skipped: history.skipped,
        projectContext: s.projectContext,
        ...(s.maxContextTokens ? { maxContextTokens: s.maxContextTokens } : {}),
        ...(s.fork !== undefined
          ? { fork: { sessionId: s.fork.sessionId, ...(s.fork.throughTurn !== undefined ? { throughTurn: s.fork.throughTurn } : {}) } }
          : {}),
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
        ...(deliveryFromWire(m.delivery) !== undefined ? { delivery: deliveryFromWire(m.delivery) } : {}),
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
      return { type: "cancel_turn", reason: r.value.reason, clearQueue: r.value.clearQueue };
    case "cancelSession":
      return { type: "cancel_session", reason: r.value.reason };
    case "ping":
      return { type: "ping" };
    case "feedback":
      return { type: "feedback", sessionId: r.value.sessionId, messageId: r.value.messageId, rating: r.value.rating };
    case "permissionDecision":
      return {
        type: "permission_decision",
        toolCallId: r.value.toolCallId,
        approved: r.value.approved,
        ...(r.value.modifier !== undefined ? { modifier: json(r.value.modifier, "permission_decision.modifier") } : {}),
      };
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
    case "rollback":
      return { type: "rollback", turns: r.value.turns };
    case "webrtcAnswer":
    case "iceCandidate":
    case "cameraRequest":
      return { type: "unsupported", name: r.case };
    case undefined:
      return { type: "unsupported", name: "empty" };
  }
}
