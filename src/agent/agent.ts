import { AsyncQueue } from "../domain/index.ts";
import { RozError } from "../errors/index.ts";
import type { JsonObject, ModelMessage } from "../models/index.ts";
import { runTurnLoop } from "./loop.ts";
import { PendingMap } from "./pending.ts";
import { createPermissionEvaluator, type PermissionEvaluator } from "./permissions.ts";
import { assembleSystem } from "./prompt.ts";
import { TokenCounter } from "./tokens.ts";
import { ToolCallIds } from "./tool-call-ids.ts";
import { LiveToolSet, offeredAs } from "./live-tools.ts";
import { applyRegistration, mergeByName } from "./tool-registry.ts";
import { AGENT_FAILURE } from "./turn-error.ts";
import { TurnTally } from "./turn-tally.ts";
import type { Agent, AgentEvent, AgentOptions, ClientTool, Delivery, PermissionAnswer, PermissionRule, ServerTool, ToolOutcome, TurnInput } from "./types.ts";

/** The state that exists only while a turn runs. */
interface RunningTurn {
  controller: AbortController;
  results: PendingMap<ToolOutcome>;
  approvals: PendingMap<PermissionAnswer>;
}

/**
 * Creates the agent of one session (see `Agent` for the contract). The history given in
 * `options.history` is restored as-is and must be valid for a provider.
 */
export function createAgent(options: AgentOptions): Agent {
  return new SessionAgent(options);
}

class SessionAgent implements Agent {
  readonly #options: AgentOptions;
  readonly #evaluator: PermissionEvaluator;
  readonly #tokens = new TokenCounter();
  readonly #ids: ToolCallIds;
  #history: ModelMessage[];
  #tools: ClientTool[];
  #pendingSystemContext: string | undefined;
  readonly #serverTools: ReadonlyMap<string, ServerTool>;
  /** The server tools as the model is offered them (after the client tools, so they win a name clash). */
  readonly #serverToolList: ClientTool[];
  readonly #live: LiveToolSet | undefined;
  #turn: RunningTurn | undefined;
  #disposed = false;

  constructor(options: AgentOptions) {
    this.#options = options;
    this.#evaluator = createPermissionEvaluator(options.permissions);
    this.#history = [...options.history];
    this.#ids = new ToolCallIds(this.#history);
    this.#tools = mergeByName([], options.tools);
    // A server tool the rules deny outright is not offered at all.
    const serverTools = (options.serverTools ?? []).filter((t) => this.#evaluator.decide({ name: t.name, category: "pure" }).policy !== "deny");
    this.#serverTools = new Map(serverTools.map((t) => [t.name, t]));
    this.#serverToolList = serverTools.map((t) => offeredAs(t, "pure"));
    this.#pendingSystemContext = options.pendingSystemContext;
    this.#live = options.liveTools && new LiveToolSet(options.liveTools);
  }

  get pendingSystemContext(): string | undefined {
    return this.#pendingSystemContext;
  }

  get permissions(): PermissionRule[] {
    return this.#evaluator.rules.map((r) => ({ ...r }));
  }

  get maxContextTokens(): number {
    return this.#options.maxContextTokens;
  }

  runTurn(input: TurnInput): AsyncIterable<AgentEvent> {
    if (this.#disposed) throw new RozError("agent_error", "the agent was disposed");
    if (this.#turn !== undefined) throw new RozError("turn_in_progress");
    const turn: RunningTurn = { controller: new AbortController(), results: new PendingMap(), approvals: new PendingMap() };
    this.#turn = turn;
    const channel = new AsyncQueue<AgentEvent>({ closeOnReturn: true, onClose: () => turn.controller.abort("the consumer stopped reading") });
    let completed = false;
    const emit = (event: AgentEvent): void => {
      if (completed) return;
      if (event.type !== "turn_complete") {
        channel.push(event);
        return;
      }
      // The turn is over before its end is seen: a next runTurn must not race it.
      completed = true;
      this.#endTurn(turn);
      channel.push(event);
      channel.end();
    };

    const hasOwnContext = input.systemContext !== undefined && input.systemContext !== "";
    const systemContext = hasOwnContext ? input.systemContext : this.#pendingSystemContext;
    if (!hasOwnContext) this.#pendingSystemContext = undefined;
    const turnTools = input.tools !== undefined && input.tools.length > 0 ? mergeByName([], input.tools) : undefined;
    const options = this.#options;

    runTurnLoop({
      input,
      model: options.model,
      limits: options.limits,
      maxContextTokens: options.maxContextTokens,
      system: assembleSystem({
        mode: input.mode,
        instructions: options.instructions,
        systemPrompt: options.systemPrompt,
        projectContext: options.projectContext,
        systemContext,
      }),
      history: this.#history,
      tools: () => this.#offered(turnTools ?? this.#tools),
      serverTools: { get: (name) => this.#serverTools.get(name) ?? this.#liveTool(name, turnTools ?? this.#tools) },
      ...(this.#live ? { refreshTools: (signal: AbortSignal) => this.#live!.refresh(signal) } : {}),
      evaluator: this.#live?.evaluator(this.#evaluator) ?? this.#evaluator,
      ids: this.#ids,
      tokens: this.#tokens,
      results: turn.results,
      approvals: turn.approvals,
      signal: turn.controller.signal,
      emit,
      publish: (history) => {
        this.#history = history;
      },
      onAgentError: (err) => options.onAgentError?.(err),
      tracing: options.tracing,
      spend: options.spend,
    }).catch((err: unknown) => {
      // The loop reports its own failures; this only guards against a failing emit path.
      options.onAgentError?.(err);
      const record = new TurnTally(input, Date.now()).build("error", AGENT_FAILURE, Date.now());
      emit({ type: "error", ...AGENT_FAILURE });
      emit({ type: "turn_complete", messageId: input.messageId, usage: record.usage, stopReason: "error", record });
    });
    return channel;
  }

  /** Live tools first, then the client tools (which win a name), then the server tools (which win over both). */
  #offered(clientTools: ClientTool[]): ClientTool[] {
    const live = this.#live?.offered(clientTools) ?? [];
    return mergeByName(live.length > 0 ? [...live, ...clientTools] : clientTools, this.#serverToolList);
  }

  /** A live tool runs on the server unless a client tool has its name. */
  #liveTool(name: string, clientTools: readonly ClientTool[]): ServerTool | undefined {
    const tool = this.#live?.get(name);
    return tool !== undefined && !clientTools.some((t) => t.name === name) ? tool : undefined;
  }

  #endTurn(turn: RunningTurn): void {
    turn.results.cancelAll();
    turn.approvals.cancelAll();
    if (this.#turn === turn) this.#turn = undefined;
  }

  submitToolResult(toolCallId: string, outcome: ToolOutcome): Delivery {
    const turn = this.#turn;
    if (turn === undefined) return "no_active_turn";
    return turn.results.settle(toolCallId, outcome) ? "accepted" : "unknown";
  }

  decidePermission(toolCallId: string, approved: boolean, modifier?: JsonObject): Delivery {
    const turn = this.#turn;
    if (turn === undefined) return "no_active_turn";
    return turn.approvals.settle(toolCallId, { approved, ...(modifier !== undefined ? { modifier } : {}) }) ? "accepted" : "unknown";
  }

  openClientWaits(): { toolCalls: string[]; approvals: string[] } {
    const turn = this.#turn;
    return { toolCalls: turn?.results.ids() ?? [], approvals: turn?.approvals.ids() ?? [] };
  }

  cancelTurn(reason: string): void {
    this.#turn?.controller.abort(reason);
  }

  registerTools(source: string | undefined, tools: ClientTool[], systemContext?: string): void {
    this.#tools = applyRegistration(this.#tools, source, tools, this.#options.limits.maxTools);
    if (systemContext !== undefined && systemContext !== "") this.#pendingSystemContext = systemContext;
  }

  clientTools(): ClientTool[] {
    return structuredClone(this.#tools);
  }

  contextTokens(): number {
    return this.#tokens.messages(this.#history);
  }

  history(): readonly ModelMessage[] {
    return this.#history;
  }

  replaceHistory(history: readonly ModelMessage[]): void {
    if (this.#turn !== undefined) throw new RozError("turn_in_progress");
    this.#history = [...history];
  }

  dispose(): void {
    this.#disposed = true;
    const turn = this.#turn;
    if (turn === undefined) return;
    turn.controller.abort("the agent was disposed");
    // Waits end on abort already; this also covers a loop that has not reached them yet.
    turn.results.cancelAll();
    turn.approvals.cancelAll();
  }
}
