import {
  addUsage,
  emptyUsage,
  type FinishReason,
  type ModelEvent,
  type ModelMessage,
  type ResolvedModel,
  type TokenUsage,
  type ToolDefinition,
  withProviderToolNames,
} from "../models/index.ts";
import type { TokenCounter } from "./tokens.ts";
import type { AgentEvent } from "./types.ts";
import { estimateCutUsage } from "./usage-estimate.ts";

/** A tool call as the provider sent it (its id is made session-unique later). */
export type ProviderToolCall = Omit<Extract<ModelEvent, { type: "tool_call" }>, "type">;

/** How a model call ended: `failed` carries what the adapter threw. */
export type ModelCallEnd = { kind: "complete" } | { kind: "aborted" } | { kind: "failed"; error: unknown };

/** Everything one model call produced, also when it was aborted or failed part-way. */
export interface ModelCallResult {
  text: string;
  thinking: string;
  thinkingSignature?: string;
  toolCalls: ProviderToolCall[];
  /** The usage events received, also those before an abort or failure. */
  usage: TokenUsage;
  finish?: FinishReason;
  end: ModelCallEnd;
}

export interface ModelCallInput {
  model: ResolvedModel;
  system: string[];
  messages: ModelMessage[];
  tools: ToolDefinition[];
  maxOutputTokens?: number | undefined;
  signal: AbortSignal;
  /** The session's cached counter: estimates the usage of a call cut before it reported any. */
  tokens: TokenCounter;
  /** Called for each delta in model order, before the call returns. */
  onDelta?: (kind: "text" | "thinking", text: string) => void;
}

const ABORTED = Symbol("aborted");
/** Longest stretch of event handling before the loop lets the event loop run. */
const YIELD_EVERY_MS = 2;

/**
 * Streams one model call and collects it. Never throws for the model's sake: a thrown
 * adapter error is returned as `end.failed`, and an abort as `end.aborted` the moment the
 * signal fires, even when the adapter is slow to notice (its iterator is then closed in
 * the background). Errors thrown by `onDelta` propagate: they are the caller's bugs.
 */
export async function callModel(input: ModelCallInput): Promise<ModelCallResult> {
  const result: ModelCallResult = { text: "", thinking: "", toolCalls: [], usage: emptyUsage(), end: { kind: "complete" } };
  const { signal } = input;
  if (signal.aborted) return { ...result, end: { kind: "aborted" } };

  let onAbort: (() => void) | undefined;
  const aborted = new Promise<typeof ABORTED>((resolve) => {
    onAbort = () => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  let iterator: AsyncIterator<ModelEvent> | undefined;
  let lastYield = performance.now();
  try {
    // Whatever the client named its tools, the provider sees names it accepts (and the calls
    // that come back carry the client's names again).
    iterator = withProviderToolNames(input.model.adapter)
      .stream({
        model: input.model.modelId,
        system: input.system,
        messages: input.messages,
        tools: input.tools,
        ...(input.maxOutputTokens !== undefined ? { maxOutputTokens: input.maxOutputTokens } : {}),
        signal,
      })
      [Symbol.asyncIterator]();
    for (;;) {
      const next = iterator.next();
      // The race may leave `next` pending; its later rejection must not go unhandled.
      next.catch(() => undefined);
      const step = await Promise.race([next, aborted]);
      if (step === ABORTED) {
        const it = iterator;
        iterator = undefined;
        void Promise.resolve()
          .then(() => it.return?.())
          .catch(() => undefined);
        return { ...result, usage: usageOfCut(input, result), end: { kind: "aborted" } };
      }
      if (step.done === true) break;
      collect(result, step.value, input.onDelta);
      // Chunks already buffered resolve as microtasks: yield now and then so that writes,
      // timers and other sessions get their turn while a fast provider floods us.
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        lastYield = performance.now();
      }
    }
    return result;
  } catch (error) {
    if (error instanceof DeltaCallbackError) throw error.cause;
    return { ...result, usage: usageOfCut(input, result), end: signal.aborted ? { kind: "aborted" } : { kind: "failed", error } };
  } finally {
    if (onAbort !== undefined) signal.removeEventListener("abort", onAbort);
  }
}

/** The reported usage, or an estimate when the call was cut before any was reported. */
function usageOfCut(input: ModelCallInput, result: ModelCallResult): TokenUsage {
  const reported = result.usage.inputTokens + result.usage.outputTokens > 0;
  return reported ? result.usage : estimateCutUsage(input, result);
}

/** Wraps an error of the caller's `onDelta` so it is not mistaken for a model error. */
class DeltaCallbackError extends Error {}

function collect(result: ModelCallResult, event: ModelEvent, onDelta: ModelCallInput["onDelta"]): void {
  switch (event.type) {
    case "text_delta":
      result.text += event.text;
      deliver(onDelta, "text", event.text);
      return;
    case "thinking_delta":
      result.thinking += event.text;
      if (event.signature !== undefined) result.thinkingSignature = event.signature;
      deliver(onDelta, "thinking", event.text);
      return;
    case "tool_call": {
      const { type: _type, ...call } = event;
      result.toolCalls.push(call);
      return;
    }
    case "usage":
      result.usage = addUsage(result.usage, event.usage);
      return;
    case "finish":
      result.finish = event.reason;
      return;
  }
}

function deliver(onDelta: ModelCallInput["onDelta"], kind: "text" | "thinking", text: string): void {
  if (onDelta === undefined || text === "") return;
  try {
    onDelta(kind, text);
  } catch (err) {
    throw new DeltaCallbackError("onDelta failed", { cause: err });
  }
}

/**
 * The `model_call_completed` event of a call that took `latencyMs`: the provider's finish
 * reason, or `cancelled` / `error` for a call that did not complete.
 */
export function modelCallCompleted(model: ResolvedModel, result: ModelCallResult, latencyMs: number): Extract<AgentEvent, { type: "model_call_completed" }> {
  const stopReason = result.end.kind === "aborted" ? "cancelled" : result.end.kind === "failed" ? "error" : (result.finish ?? "end_turn");
  const slash = model.name.indexOf("/");
  return {
    type: "model_call_completed",
    model: model.name,
    modelId: model.modelId,
    provider: slash > 0 ? model.name.slice(0, slash) : model.name,
    usage: result.usage,
    latencyMs: Math.max(0, Math.round(latencyMs)),
    stopReason,
  };
}
