import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { InputDelivery, type SessionRequestSchema, ToolCategoryHint, type ToolSchemaSchema } from "./gen/roz/v1/agent_pb.js";
import type { ApprovalDecision, Delivery, SendOptions, Tools } from "./options.ts";

/** One request of the session protocol (the `request` oneof of `SessionRequest`). */
export type Request = NonNullable<MessageInitShape<typeof SessionRequestSchema>["request"]>;

const deliveries: Record<Delivery, InputDelivery> = {
  queue: InputDelivery.QUEUE,
  steer: InputDelivery.STEER,
  interrupt: InputDelivery.INTERRUPT,
};

const categories = { pure: ToolCategoryHint.TOOL_CATEGORY_PURE, physical: ToolCategoryHint.TOOL_CATEGORY_PHYSICAL } as const;

/** The `ToolSchema`s that offer `tools` to the model. */
export function toolSchemas(tools: Tools = {}): MessageInitShape<typeof ToolSchemaSchema>[] {
  return Object.entries(tools).map(([name, t]) => ({
    name,
    description: t.description,
    parametersSchema: t.parameters ?? { type: "object", properties: {} },
    ...(t.timeoutMs !== undefined ? { timeoutMs: t.timeoutMs } : {}),
    ...(t.category ? { category: categories[t.category] } : {}),
  }));
}

export function userMessage(content: string, messageId: string, options: SendOptions): Request {
  const { delivery = "queue", messageId: _, ...rest } = options;
  return { case: "userMessage", value: { ...rest, content, messageId, delivery: deliveries[delivery] } };
}

/** A tool's return value as a `ToolResult` (a string as it is, anything else as JSON; a throw as a failed result). */
export function toolResult(toolCallId: string, outcome: { ok: true; value: unknown } | { ok: false; error: unknown }, durationMs: number): Request {
  const result = outcome.ok ? (typeof outcome.value === "string" ? outcome.value : (JSON.stringify(outcome.value) ?? "")) : messageOf(outcome.error);
  return { case: "toolResult", value: { toolCallId, success: outcome.ok, result, durationMs: BigInt(Math.round(durationMs)) } };
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export function decision(toolCallId: string, d: ApprovalDecision): Request {
  const { approved, modifier } = typeof d === "boolean" ? { approved: d, modifier: undefined } : d;
  return { case: "permissionDecision", value: { toolCallId, approved, ...(modifier ? { modifier: modifier as JsonObject } : {}) } };
}

export const ping: Request = { case: "ping", value: {} };
