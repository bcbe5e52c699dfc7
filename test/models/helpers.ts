import { addUsage, emptyUsage, type ModelAdapter, type ModelEvent, type ModelMessage, type ModelRequest } from "../../src/models/index.ts";

/** A request with sensible defaults; `signal` defaults to one that never aborts. */
export function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "fake-model",
    system: ["You are a test."],
    messages: [user("hello")],
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  };
}

export const user = (text: string): ModelMessage => ({ role: "user", parts: [{ type: "text", text }] });

/** Every event of one call. */
export async function collect(adapter: ModelAdapter, req: ModelRequest): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of adapter.stream(req)) events.push(event);
  return events;
}

/** The events of one call, plus what it threw (undefined when it finished). */
export async function collectUntilError(adapter: ModelAdapter, req: ModelRequest): Promise<{ events: ModelEvent[]; error: unknown }> {
  const events: ModelEvent[] = [];
  try {
    for await (const event of adapter.stream(req)) events.push(event);
    return { events, error: undefined };
  } catch (error) {
    return { events, error };
  }
}

export const textOf = (events: ModelEvent[]) => events.flatMap((e) => (e.type === "text_delta" ? [e.text] : [])).join("");
export const thinkingOf = (events: ModelEvent[]) => events.flatMap((e) => (e.type === "thinking_delta" ? [e.text] : [])).join("");
export const toolCallsOf = (events: ModelEvent[]) => events.filter((e) => e.type === "tool_call");
/** The usage of every `usage` event, added up (an adapter may report it in parts as the provider does). */
export const usageOf = (events: ModelEvent[]) => events.reduce((sum, e) => (e.type === "usage" ? addUsage(sum, e.usage) : sum), emptyUsage());
export const finishOf = (events: ModelEvent[]) => (events.at(-1)?.type === "finish" ? (events.at(-1) as { reason: string }).reason : undefined);
