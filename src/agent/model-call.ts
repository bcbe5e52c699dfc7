import {
  addUsage,
  emptyUsage,
  type FinishReason,
  type ModelEvent,
  type ModelMessage,
  type ResolvedModel,
  type TokenUsage,
  type ToolDefinition,
  pushEvents,
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
  /** What `usage` cost (set by `callWithinBudget`; 0 until then). */
  costUsd: number;
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

/**
 * Streams one model call and collects it. Never throws for the model's sake: a thrown
 * adapter error is returned as `end.failed`, and an abort as `end.aborted` the moment the
 * signal fires, even when the adapter is slow to notice (what it pushes after that is
 * ignored). Errors thrown by `onDelta` propagate: they are the caller's bugs (the call is
 * then aborted).
 *
 * The adapter pushes its events (see `pushEvents`): each is collected in the call that
 * parsed it, with no promise per event.
 */
export function callModel(input: ModelCallInput): Promise<ModelCallResult> {
  const result: ModelCallResult = { text: "", thinking: "", toolCalls: [], usage: emptyUsage(), costUsd: 0, end: { kind: "complete" } };
  const { signal } = input;
  if (signal.aborted) return Promise.resolve({ ...result, end: { kind: "aborted" } });
  // Aborted by the turn, or by us when `onDelta` failed.
  const stop = new AbortController();
  const callSignal = AbortSignal.any([signal, stop.signal]);
  return new Promise<ModelCallResult>((resolve, reject) => {
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      return true;
    };
    const onAbort = (): void => {
      if (settle()) resolve({ ...result, usage: usageOfCut(input, result), end: { kind: "aborted" } });
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const sink = (event: ModelEvent): void => {
      if (settled) return;
      try {
        collect(result, event, input.onDelta);
      } catch (err) {
        if (settle()) reject(err);
        stop.abort();
      }
    };
    // Whatever the client named its tools, the provider sees names it accepts (and the calls
    // that come back carry the client's names again).
    let running: Promise<void>;
    try {
      running = pushEvents(
        withProviderToolNames(input.model.adapter),
        {
          model: input.model.modelId,
          system: input.system,
          messages: input.messages,
          tools: input.tools,
          ...(input.maxOutputTokens !== undefined ? { maxOutputTokens: input.maxOutputTokens } : {}),
          signal: callSignal,
        },
        sink,
      );
    } catch (error) {
      running = Promise.reject(error);
    }
    running.then(
      () => {
        if (settle()) resolve(result);
      },
      (error: unknown) => {
        if (settle()) resolve({ ...result, usage: usageOfCut(input, result), end: signal.aborted ? { kind: "aborted" } : { kind: "failed", error } });
      },
    );
  });
}

/**
 * What a cut call cost: what the provider reported before the cut (the prompt and its cache
 * reads, from Anthropic's message_start), and an estimate of what it never reported (a prompt
 * Chat Completions would have reported last; output streamed after its last usage event).
 */
function usageOfCut(input: ModelCallInput, result: ModelCallResult): TokenUsage {
  const reported = result.usage;
  const estimate = estimateCutUsage(input, result);
  return {
    inputTokens: reported.inputTokens > 0 ? reported.inputTokens : estimate.inputTokens,
    outputTokens: Math.max(reported.outputTokens, estimate.outputTokens),
    cacheReadTokens: reported.cacheReadTokens,
    cacheCreationTokens: reported.cacheCreationTokens,
  };
}

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
  if (onDelta !== undefined && text !== "") onDelta(kind, text);
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
