import type { ModelMessage, ResolvedModel } from "../models/index.ts";
import { createActivityReporter } from "./activity.ts";
import { compactHistory } from "./compaction.ts";
import type { ModelCallInput, ModelCallResult } from "./model-call.ts";
import { observationTools } from "./observe.ts";
import type { PendingMap } from "./pending.ts";
import type { PermissionEvaluator } from "./permissions.ts";
import { buildUserMessage, toolDefinitions } from "./prompt.ts";
import { MAX_CYCLES_SYSTEM, SUMMARY_SYSTEM, renderTranscript } from "./summary.ts";
import type { TokenCounter } from "./tokens.ts";
import type { ToolCallIds } from "./tool-call-ids.ts";
import { callWithinBudget, type SpendGate } from "./spend-gate.ts";
import { dispatchTools, type TracedDispatch } from "./tool-dispatch.ts";
import { DEFAULT_TOOL_RESULT_ECHO_BYTES } from "./tool-echo.ts";
import { awaitApprovals, needsApproval, screenCalls, type PlannedCall, type Screening, type Verdict } from "./tool-gate.ts";
import { TurnConversation } from "./turn-conversation.ts";
import { AGENT_FAILURE, callFailure, type TurnError } from "./turn-error.ts";
import { assistantMessage } from "./turn-messages.ts";
import { TurnTally } from "./turn-tally.ts";
import type { AgentEvent, AgentLimits, ClientTool, PermissionAnswer, ServerTool, StopReason, ToolOutcome, TurnInput } from "./types.ts";

/** Everything one turn needs, fixed for the turn except `tools()` (registrations may land mid-turn). */
export interface TurnDeps extends TracedDispatch {
  input: TurnInput;
  model: ResolvedModel;
  limits: AgentLimits;
  maxContextTokens: number;
  system: string[];
  /** The history before this turn (valid for a provider). */
  history: readonly ModelMessage[];
  /** The tools offered at the next model call. */
  tools: () => ClientTool[];
  evaluator: PermissionEvaluator;
  ids: ToolCallIds;
  tokens: TokenCounter;
  results: PendingMap<ToolOutcome>;
  /** Tools run by the server instead of the client, by name; `refreshTools` updates the live ones before each model call. */
  serverTools: Pick<ReadonlyMap<string, ServerTool>, "get">;
  refreshTools?: (signal: AbortSignal) => Promise<void>;
  approvals: PendingMap<PermissionAnswer>;
  signal: AbortSignal;
  emit: (event: AgentEvent) => void;
  /** Receives the history each time it is valid again (never with an unanswered tool use). */
  publish: (history: ModelMessage[]) => void;
  /** Called with the cause of an `agent_error`, for logs. */
  onAgentError: (error: unknown) => void;
  /** Asked before every model call (a spent budget refuses it) and told what each one used; none: no limits. */
  spend?: SpendGate | undefined;
}

/** Observation calls of an OODA cycle, or the model's own calls. */
type Purpose = "observe" | "act";

/** What the loop does next. */
type Step =
  | { kind: "run_again"; observed: boolean }
  | { kind: "awaiting_approval"; purpose: Purpose; calls: PlannedCall[]; screenings: Screening[] }
  | { kind: "awaiting_tools"; purpose: Purpose; calls: PlannedCall[]; verdicts: Verdict[] }
  | { kind: "final"; stopReason: Exclude<StopReason, "cancelled">; error?: TurnError; refused?: true }
  | { kind: "cancelled" };

/**
 * Runs one turn to its end and emits all its events, the last being the single
 * `turn_complete`. Never throws: a failure of the agent itself ends the turn with
 * `error{agent_error}` + `turn_complete{error}`, with the last valid history kept.
 */
export function runTurnLoop(deps: TurnDeps): Promise<void> {
  return new TurnLoop(deps).run();
}

class TurnLoop {
  readonly #deps: TurnDeps;
  readonly #tally: TurnTally;
  readonly #activity: ReturnType<typeof createActivityReporter>;
  readonly #conversation: TurnConversation;
  #cycles = 0;
  #failedCycles = 0;

  constructor(deps: TurnDeps) {
    this.#deps = deps;
    this.#tally = new TurnTally(deps.input, Date.now());
    this.#activity = createActivityReporter(deps.emit);
    const { input, model } = deps;
    const messages = [...deps.history, buildUserMessage(input.content, input.context, model.supportsImages)];
    this.#conversation = new TurnConversation(messages, this.#tally, deps.publish);
  }

  async run(): Promise<void> {
    let step: Step = { kind: "run_again", observed: false };
    try {
      this.#conversation.publish();
      for (;;) {
        while (step.kind !== "final" && step.kind !== "cancelled") step = await this.#next(step);
        if (step.kind === "cancelled" || step.stopReason === "error" || step.refused) break;
        if (!this.#joinSteers()) {
          await this.#compactAfterTurn();
          if (!this.#joinSteers()) break;
        }
        // Messages steered in after the model's last call get one more call: each is answered in this turn.
        step = { kind: "run_again", observed: true };
      }
    } catch (err) {
      this.#deps.onAgentError(err);
      step = { kind: "final", stopReason: "error", error: AGENT_FAILURE };
    }
    this.#finish(step);
  }

  #next(step: Exclude<Step, { kind: "final" | "cancelled" }>): Promise<Step> {
    switch (step.kind) {
      case "run_again":
        return this.#runAgain(step.observed);
      case "awaiting_approval":
        return this.#awaitApproval(step);
      case "awaiting_tools":
        return this.#awaitTools(step);
    }
  }

  async #runAgain(observed: boolean): Promise<Step> {
    const deps = this.#deps;
    if (deps.signal.aborted) return { kind: "cancelled" };
    await deps.refreshTools?.(deps.signal);
    const tools = deps.tools();
    if (deps.input.mode === "ooda_re_act" && !observed) {
      const observe = observationTools(tools);
      if (observe.length > 0)
        return this.#plan(
          "observe",
          observe.map((t) => ({ id: deps.ids.fresh("observe"), name: t.name, parameters: {}, tool: t })),
        );
    }
    this.#joinSteers();
    this.#activity("thinking");
    await this.#compact();
    if (deps.signal.aborted) return { kind: "cancelled" };
    this.#cycles++;
    const result = await this.#callModel(deps.system, toolDefinitions(tools));
    return this.#afterModel(result, tools);
  }

  #callModel(system: string[], tools: ReturnType<typeof toolDefinitions>): Promise<ModelCallResult> {
    const deps = this.#deps;
    const messageId = deps.input.messageId;
    return this.#reportedCall({
      model: deps.model,
      system,
      messages: this.#conversation.messages,
      tools,
      maxOutputTokens: deps.limits.maxOutputTokens,
      signal: deps.signal,
      tokens: deps.tokens,
      onDelta: (kind, text) => deps.emit(kind === "text" ? { type: "text_delta", messageId, text } : { type: "thinking_delta", messageId, text }),
    }).then((result) => {
      this.#tally.addModelOutput(result.text, result.thinking, result);
      return result;
    });
  }

  #afterModel(result: ModelCallResult, offered: readonly ClientTool[]): Step {
    const deps = this.#deps;
    const byName = new Map(offered.map((t) => [t.name, t]));
    // Calls of a response cut by the output limit are not run (nor kept): they may be
    // the reason it ran out, and the turn stops anyway.
    const truncated = result.end.kind === "complete" && result.finish === "max_tokens";
    const calls: PlannedCall[] = truncated
      ? []
      : result.toolCalls.map((c) => ({
          id: deps.ids.claim(c.id),
          name: c.name,
          parameters: c.arguments,
          tool: byName.get(c.name),
          invalidArguments: c.invalidArguments,
        }));
    this.#conversation.keepReply(assistantMessage(result.text, result.thinking, result.thinkingSignature, calls));
    if (result.end.kind === "aborted") {
      this.#conversation.closeUnrun(calls, "cancelled", deps.emit);
      return { kind: "cancelled" };
    }
    if (result.end.kind === "failed") {
      this.#conversation.closeUnrun(calls, "not run: the model call failed", deps.emit);
      return { kind: "final", ...callFailure(result.end.error) };
    }
    // A refusal (content_filter) ends the turn as end_turn; the note tells the client why.
    if (result.finish === "content_filter") this.#activity("thinking", "refusal: the model declined to answer");
    if (calls.length === 0) {
      this.#conversation.publish();
      return { kind: "final", stopReason: truncated ? "max_tokens" : "end_turn", ...(result.finish === "content_filter" ? { refused: true } : {}) };
    }
    return this.#plan("act", calls);
  }

  /** Starts tool calls, appending the assistant message for observation calls we make ourselves. */
  #plan(purpose: Purpose, calls: PlannedCall[]): Step {
    if (purpose === "observe") this.#conversation.addObservation(calls);
    const screenings = screenCalls(calls, this.#deps.evaluator);
    if (needsApproval(screenings)) return { kind: "awaiting_approval", purpose, calls, screenings };
    return { kind: "awaiting_tools", purpose, calls, verdicts: screenings as Verdict[] };
  }

  async #awaitApproval(step: Extract<Step, { kind: "awaiting_approval" }>): Promise<Step> {
    const deps = this.#deps;
    const verdicts = await awaitApprovals(step.calls, step.screenings, {
      approvals: deps.approvals,
      approvalTimeoutMs: deps.limits.approvalTimeoutMs,
      signal: deps.signal,
      onAsk: (approval) => this.#activity("waiting_approval", approval.toolCallId, { approval }),
      emit: deps.emit,
    });
    return { kind: "awaiting_tools", purpose: step.purpose, calls: step.calls, verdicts };
  }

  async #awaitTools(step: Extract<Step, { kind: "awaiting_tools" }>): Promise<Step> {
    const deps = this.#deps;
    const done = await dispatchTools(step.calls, step.verdicts, {
      results: deps.results,
      serverTools: deps.serverTools,
      signal: deps.signal,
      defaultTimeoutMs: deps.limits.defaultToolTimeoutMs,
      resultMaxTokens: deps.limits.toolResultMaxTokens,
      echoBytes: deps.limits.toolResultEchoBytes ?? DEFAULT_TOOL_RESULT_ECHO_BYTES,
      emit: deps.emit,
      tracing: deps.tracing,
      onRequest: (name) => this.#activity("calling_tool", name, step.purpose === "observe" ? { observing: true } : {}),
    });
    this.#conversation.addToolResults(done);
    if (deps.signal.aborted) return { kind: "cancelled" };
    if (step.purpose === "observe") return { kind: "run_again", observed: true };
    this.#failedCycles = done.every((d) => d.result.isError) ? this.#failedCycles + 1 : 0;
    if (this.#failedCycles >= deps.limits.toolErrorLimit) return { kind: "final", stopReason: "tool_error_limit" };
    if (this.#cycles >= deps.limits.maxCycles) return this.#closingCall();
    return { kind: "run_again", observed: false };
  }

  /** The one tool-free call after `maxCycles`: the model reports where it got to. */
  async #closingCall(): Promise<Step> {
    this.#activity("thinking");
    const result = await this.#callModel([...this.#deps.system, MAX_CYCLES_SYSTEM], []);
    this.#conversation.keepReply(assistantMessage(result.text, result.thinking, result.thinkingSignature, []));
    this.#conversation.publish();
    if (result.end.kind === "aborted") return { kind: "cancelled" };
    if (result.end.kind === "failed") return { kind: "final", ...callFailure(result.end.error) };
    return { kind: "final", stopReason: "max_cycles" };
  }

  /** Every model call of the turn goes through here: within the budgets, and each call made is reported once it ended, however it ended. */
  #reportedCall(input: ModelCallInput): Promise<ModelCallResult> {
    return callWithinBudget(input, this.#deps.spend, this.#deps.emit);
  }

  /** Adds the messages steered into the turn since the last call; true when there were any. */
  #joinSteers(): boolean {
    return this.#conversation.joinSteers(this.#deps.input, this.#deps.model.supportsImages, this.#deps.emit);
  }

  /** Runs before turn_complete, so that the record and the usage of the turn include it and the turn really is over when it is reported. */
  #compactAfterTurn(): Promise<void> {
    return this.#compact().catch((err: unknown) => this.#deps.onAgentError(err));
  }

  async #compact(): Promise<void> {
    const deps = this.#deps;
    const { messages, applied } = await compactHistory(this.#conversation.messages, {
      maxContextTokens: deps.maxContextTokens,
      tokens: deps.tokens,
      summarise: (older) => this.#summarise(older),
      emit: deps.emit,
    });
    if (applied > 0) this.#conversation.compacted(messages, applied);
  }

  /** The tool-free summary call of compaction; its usage counts for the turn. */
  async #summarise(older: readonly ModelMessage[]): Promise<string | undefined> {
    const deps = this.#deps;
    const transcript = renderTranscript(older, Math.floor(deps.maxContextTokens / 2));
    const result = await this.#reportedCall({
      model: deps.model,
      system: [SUMMARY_SYSTEM],
      messages: [{ role: "user", parts: [{ type: "text", text: transcript }] }],
      tools: [],
      maxOutputTokens: deps.limits.maxOutputTokens,
      signal: deps.signal,
      tokens: deps.tokens,
    });
    this.#tally.addUsage(result);
    return result.end.kind === "complete" ? result.text : undefined;
  }

  #finish(step: Extract<Step, { kind: "final" | "cancelled" }>): void {
    const deps = this.#deps;
    const stopReason: StopReason = step.kind === "cancelled" ? "cancelled" : step.stopReason;
    const error = step.kind === "final" ? step.error : undefined;
    if (error !== undefined) deps.emit({ type: "error", ...error });
    this.#activity("idle");
    // A refused turn is rolled back as it ends (continuing with it yields more refusals); no steer joined it.
    if (step.kind === "final" && step.refused) deps.publish([...deps.history]);
    const record = { ...this.#tally.build(stopReason, error, Date.now()), ...(step.kind === "final" && step.refused ? { rolledBack: true } : {}) };
    deps.emit({ type: "turn_complete", messageId: deps.input.messageId, usage: record.usage, stopReason, record });
  }
}
