import { hostname } from "node:os";
import type { Agent, AgentEvent, AgentMode, ClientTool, LiveTools, PermissionRule, ServerTool, TurnRecord, TurnSpan } from "../agent/index.ts";
import type { ModelMessage, ResolvedModel, TokenUsage } from "../models/index.ts";
import type { ParentSession, TeamsDeps } from "./ports.ts";
import type { TaskLog } from "./task-log.ts";
import { RozError } from "../errors/index.ts";
import type { WorkerEnding, WorkerFailure, WorkerToolChoice } from "./types.ts";

/** Everything one worker runs with, decided when it is spawned. */
export interface WorkerSpec {
  id: string;
  taskId: string;
  tenantId: string;
  prompt: string;
  mode: AgentMode;
  model: ResolvedModel;
  depth: number;
  /** Its client tools: a subset of the parent session's (none without a parent). */
  tools: ClientTool[];
  permissions: PermissionRule[];
  instructions?: string;
  parent?: ParentSession;
  serverTools: ServerTool[];
  liveTools?: LiveTools;
}

const ZERO_USAGE: TokenUsage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 };

/** The client tools a worker gets of its parent's `available` ones: all (default), none, or the named ones. */
export function chooseTools(choice: WorkerToolChoice | undefined, available: ClientTool[]): ClientTool[] {
  if (choice === undefined || choice === "all") return available;
  if (choice === "none") return [];
  const byName = new Map(available.map((t) => [t.name, t]));
  const unknown = choice.filter((n) => !byName.has(n));
  if (unknown.length > 0)
    throw new RozError("invalid_argument", `unknown client tools ${unknown.map((n) => `"${n}"`).join(", ")}: the parent session has no such tools`);
  return choice.map((n) => byName.get(n)!);
}

/** A tool whose category is not `pure` counts as physical, as in permission matching (§4). */
const isPhysical = (tool: ClientTool | undefined): boolean => tool !== undefined && tool.category !== "pure";

/** The text of the conversation's last assistant message: a worker's result. */
function lastAssistantText(history: readonly ModelMessage[]): string | undefined {
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i]!;
    if (m.role !== "assistant") continue;
    const text = m.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("");
    if (text !== "") return text;
  }
  return undefined;
}

/**
 * One worker: a server-run turn of the one agent loop of `src/agent`, whose first user message
 * is its prompt exactly as given. Its lifecycle goes to the task log in order: started, a phase
 * per model cycle, a tool call per forwarded call, approvals, then completed or failed, then
 * exited. Its client-tool calls go to the parent session's client under ids made unique in
 * that session (`<worker id>/<call id>`).
 */
export class WorkerRun {
  readonly spec: WorkerSpec;
  /** Settles after `WorkerExited` was logged and the worker's end stored. */
  readonly done: Promise<WorkerEnding>;
  #cancelReason: WorkerFailure | undefined;
  #cancelTurn: ((reason: string) => void) | undefined;
  #ending: WorkerEnding | undefined;
  readonly #deps: TeamsDeps;
  readonly #log: TaskLog;

  constructor(spec: WorkerSpec, log: TaskLog, deps: TeamsDeps) {
    this.spec = spec;
    this.#log = log;
    this.#deps = deps;
    this.done = this.#run();
  }

  /** How it ended; undefined while it runs. */
  get ending(): WorkerEnding | undefined {
    return this.#ending;
  }

  /** Stops the worker; it fails with `reason` (the first reason given wins). */
  cancel(reason: WorkerFailure): void {
    this.#cancelReason ??= reason;
    this.#cancelTurn?.(reason);
  }

  async #run(): Promise<WorkerEnding> {
    const { spec } = this;
    const deps = this.#deps;
    void this.#log.append({ type: "worker_started", workerId: spec.id, hostId: deps.nodeId ?? hostname() });
    let usage = ZERO_USAGE;
    let costUsd = 0;
    let transcript: readonly ModelMessage[] = [];
    let ending: WorkerEnding;
    const routes: (() => void)[] = [];
    const timer = setTimeout(() => this.cancel("timeout"), deps.limits.workerTimeoutMs);
    let agent: Agent | undefined;
    let record: TurnRecord | undefined;
    // The worker's span: a child of the span active at its spawn (the parent turn's spawn_worker call).
    const span: TurnSpan | undefined = deps.tracing?.startTurn({
      conversationId: spec.parent?.sessionId ?? spec.taskId,
      model: spec.model.name,
      input: spec.prompt,
      agentId: spec.id,
    });
    try {
      agent = deps.createAgent({
        model: spec.model,
        tools: spec.tools,
        history: [],
        projectContext: [],
        ...(spec.instructions ? { instructions: spec.instructions } : {}),
        maxContextTokens: spec.model.contextWindow ?? deps.defaultMaxContextTokens,
        permissions: spec.permissions,
        limits: deps.agentLimits,
        serverTools: spec.serverTools,
        ...(spec.liveTools ? { liveTools: spec.liveTools } : {}),
        onAgentError: (err) => deps.log.error({ err, workerId: spec.id, taskId: spec.taskId }, "worker agent error"),
        // Its calls count toward its parent session's budget and spend, and its tenant's.
        ...(deps.spend ? { spend: deps.spend({ tenantId: spec.tenantId, ...(spec.parent ? { sessionId: spec.parent.sessionId } : {}) }) } : {}),
      });
      const running = agent;
      this.#cancelTurn = (reason) => running.cancelTurn(reason);
      if (this.#cancelReason !== undefined) agent.cancelTurn(this.#cancelReason);
      const byName = new Map(spec.tools.map((t) => [t.name, t]));
      let phase = 0;
      const routed = new Set<string>();
      /** The agent's ids of the calls sent to the parent's client as `ToolRequest`. */
      const forwardedCalls = new Set<string>();
      /** Routes the client's answers for one of the agent's call ids (tool result and decision alike). */
      const routeOnce = (callId: string, forwarded: string, toolName: string): void => {
        if (routed.has(callId) || spec.parent === undefined) return;
        routed.add(callId);
        routes.push(
          spec.parent.route(forwarded, {
            result: (outcome) => running.submitToolResult(callId, outcome) === "accepted",
            decide: (approved) => {
              if (running.decidePermission(callId, approved) !== "accepted") return false;
              if (!approved && isPhysical(byName.get(toolName))) this.cancel("safety_violation");
              return true;
            },
          }),
        );
      };
      // Appends are not awaited: their order is fixed when they are numbered, and the worker never waits for the log.
      const handle = (event: AgentEvent): void => {
        if (event.type === "activity" && event.state === "thinking") {
          void this.#log.append({ type: "worker_phase", workerId: spec.id, phase: ++phase, mode: spec.mode });
        } else if (event.type === "activity" && event.state === "waiting_approval" && event.approval && spec.parent) {
          const forwarded = `${spec.id}/${event.approval.toolCallId}`;
          routeOnce(event.approval.toolCallId, forwarded, event.approval.toolName);
          void this.#log.append({
            type: "worker_approval_requested",
            workerId: spec.id,
            taskId: spec.taskId,
            approvalId: forwarded,
            toolName: event.approval.toolName,
            reason: event.approval.reason,
            timeoutSecs: Math.ceil(event.approval.timeoutMs / 1000),
          });
          spec.parent.askApproval({ ...event.approval, toolCallId: forwarded });
        } else if (event.type === "approval_resolved" && spec.parent) {
          // However the wait ended (a decision, its timeout, a cancel), the team stream says so.
          const approvalId = `${spec.id}/${event.toolCallId}`;
          void this.#log.append({ type: "worker_approval_resolved", workerId: spec.id, taskId: spec.taskId, approvalId, approved: event.approved });
        } else if (event.type === "tool_request") {
          void this.#log.append({ type: "worker_tool_call", workerId: spec.id, tool: event.toolName });
          const forwarded = `${spec.id}/${event.toolCallId}`;
          routeOnce(event.toolCallId, forwarded, event.toolName);
          forwardedCalls.add(event.toolCallId);
          spec.parent?.requestTool({
            workerId: spec.id,
            toolCallId: forwarded,
            toolName: event.toolName,
            parameters: event.parameters,
            timeoutMs: event.timeoutMs,
          });
        } else if (event.type === "tool_finished" && spec.parent && forwardedCalls.delete(event.toolCallId)) {
          const { toolName, success, result, truncated } = event;
          spec.parent.toolFinished({ workerId: spec.id, toolCallId: `${spec.id}/${event.toolCallId}`, toolName, success, result, truncated });
        } else if (event.type === "turn_complete") {
          record = event.record;
        }
      };
      const consume = async (): Promise<void> => {
        for await (const event of running.runTurn({ messageId: spec.id, content: spec.prompt, context: [], mode: spec.mode })) handle(event);
      };
      await (span ? span.run(consume) : consume());
      transcript = agent.history();
      usage = record?.usage ?? ZERO_USAGE;
      costUsd = record?.costUsd ?? 0;
      ending = this.#endingOf(record, transcript, byName);
    } catch (err) {
      deps.log.error({ err, workerId: spec.id, taskId: spec.taskId }, "worker failed outside the agent loop");
      ending = { status: "failed", reason: this.#cancelReason ?? "model_error" };
    } finally {
      span?.end(record);
      clearTimeout(timer);
      for (const unroute of routes) unroute();
      agent?.dispose();
    }
    this.#ending = ending;
    await this.#log.append(
      ending.status === "completed"
        ? { type: "worker_completed", workerId: spec.id, result: ending.result }
        : { type: "worker_failed", workerId: spec.id, reason: ending.reason },
    );
    try {
      await deps.store.endWorker(spec.tenantId, spec.taskId, spec.id, {
        status: ending.status,
        ...(ending.status === "completed" ? { result: ending.result } : { failure: ending.reason }),
        transcript,
        usage,
        costUsd,
      });
    } catch (err) {
      deps.log.error({ err, workerId: spec.id }, "could not store the worker's end");
    }
    await this.#log.append({ type: "worker_exited", workerId: spec.id, parentTaskId: spec.taskId });
    return ending;
  }

  #endingOf(record: TurnRecord | undefined, transcript: readonly ModelMessage[], tools: Map<string, ClientTool>): WorkerEnding {
    if (this.#cancelReason !== undefined) return { status: "failed", reason: this.#cancelReason };
    if (record === undefined || record.stopReason === "cancelled") return { status: "failed", reason: "cancelled" };
    // A budget that refused its model call leaves it as failed as a provider that did.
    if (record.stopReason === "error" || record.stopReason === "budget_exceeded") return { status: "failed", reason: "model_error" };
    // A physical tool refused by the rules: the worker tried what it must not do.
    if (record.toolCalls.some((c) => (c.permission === "policy_denied" || c.permission === "denied") && isPhysical(tools.get(c.name)))) {
      return { status: "failed", reason: "safety_violation" };
    }
    return { status: "completed", result: lastAssistantText(transcript) ?? record.assistantText };
  }
}
