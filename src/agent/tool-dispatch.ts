import type { AgentEvent, ServerTool, ToolCallRecord, ToolDeniedReason, ToolOutcome, Tracing } from "./types.ts";
import type { PendingMap } from "./pending.ts";
import { deniedReasonOf, type PlannedCall, type Verdict } from "./tool-gate.ts";
import { toolFinished } from "./tool-echo.ts";
import { tracedCall } from "./tool-span.ts";
import { toolTimeoutMs } from "./tool-registry.ts";
import type { ToolResultForModel } from "./turn-messages.ts";
import { truncateHeadTail } from "./truncate.ts";

/** One call's end: what the model is told, and the stored record (full result text). */
export interface DispatchedCall {
  result: ToolResultForModel;
  record: ToolCallRecord;
}

/** Where tool calls are traced (absent: not traced). */
export interface TracedDispatch {
  tracing?: Tracing | undefined;
}

export interface DispatchDeps extends TracedDispatch {
  results: PendingMap<ToolOutcome>;
  serverTools: Pick<ReadonlyMap<string, ServerTool>, "get">;
  signal: AbortSignal;
  defaultTimeoutMs: number;
  /** Token budget of one result for the model (head+tail cut beyond it). */
  resultMaxTokens: number;
  /** How much of a result `tool_finished` carries (UTF-8 bytes). */
  echoBytes: number;
  emit: (event: AgentEvent) => void;
  /** Announces a request going out: `activity{calling_tool, detail: name}`. */
  onRequest: (toolName: string) => void;
}

/**
 * Runs the calls of one model response (session-behaviour.md §3). Refused calls send no
 * request, only a `tool_denied`. PURE calls are requested at once; the others one at a time, each only after
 * the previous one's result (or timeout) — the two groups run side by side. Requests go
 * out in call order as far as these rules allow, and the results come back in call
 * order. After the signal aborts no request is sent and open waits end as `cancelled`.
 * Every call that went out (a request, or a server tool started) ends with a `tool_finished`:
 * its result, or its timeout or cancellation as a failure.
 */
export async function dispatchTools(calls: readonly PlannedCall[], verdicts: readonly Verdict[], deps: DispatchDeps): Promise<DispatchedCall[]> {
  let chain: Promise<unknown> | undefined;
  const running = calls.map((call, i) => {
    const verdict = verdicts[i]!;
    if (!verdict.run) return Promise.resolve(refused(call, verdict, deps.emit));
    // An approval's modifier may have changed the arguments: the call runs as approved.
    const approved = verdict.parameters === undefined ? call : { ...call, parameters: verdict.parameters };
    const { permission } = verdict;
    if (call.tool?.category === "pure") return runTraced(approved, permission, deps);
    const next: Promise<DispatchedCall> = chain === undefined ? runTraced(approved, permission, deps) : chain.then(() => runTraced(approved, permission, deps));
    chain = next;
    return next;
  });
  return Promise.all(running);
}

/** The event that tells the client of a call refused without reaching it. */
export function toolDenied(call: PlannedCall, reason: ToolDeniedReason, detail: string): Extract<AgentEvent, { type: "tool_denied" }> {
  return { type: "tool_denied", toolCallId: call.id, toolName: call.name, reason, detail };
}

function refused(call: PlannedCall, verdict: Extract<Verdict, { run: false }>, emit: DispatchDeps["emit"]): DispatchedCall {
  const now = Date.now();
  emit(toolDenied(call, deniedReasonOf(verdict.permission), verdict.message));
  return {
    result: { id: call.id, name: call.name, content: verdict.message, isError: true },
    record: { id: call.id, name: call.name, parameters: call.parameters, permission: verdict.permission, error: verdict.message, startedAt: now, endedAt: now },
  };
}

function runTraced(call: PlannedCall, permission: "allowed" | "approved", deps: DispatchDeps): Promise<DispatchedCall> {
  const { tracing } = deps;
  if (tracing === undefined) return runOne(call, permission, deps);
  return tracedCall(tracing, call, deps.serverTools.get(call.name) !== undefined, () => runOne(call, permission, deps));
}

async function runOne(call: PlannedCall, permission: "allowed" | "approved", deps: DispatchDeps): Promise<DispatchedCall> {
  const startedAt = Date.now();
  const base = { id: call.id, name: call.name, parameters: call.parameters, startedAt };
  const failed = (message: string, perm: ToolCallRecord["permission"]): DispatchedCall => ({
    result: { id: call.id, name: call.name, content: message, isError: true },
    record: { ...base, permission: perm, error: message, endedAt: Date.now() },
  });
  const answered = (outcome: ToolOutcome): DispatchedCall => ({
    result: { id: call.id, name: call.name, content: contentForModel(outcome, deps.resultMaxTokens), isError: !outcome.success },
    record: { ...base, permission, outcome, endedAt: Date.now() },
  });
  if (deps.signal.aborted) {
    deps.emit(toolDenied(call, "cancelled", "cancelled"));
    return failed("cancelled", "cancelled");
  }

  const finished = (success: boolean, result: string): void => deps.emit(toolFinished(call, success, result, deps.echoBytes));
  const serverTool = deps.serverTools.get(call.name);
  if (serverTool !== undefined) {
    deps.onRequest(call.name);
    const outcome = await runServerTool(serverTool, call, deps.signal);
    if (deps.signal.aborted) {
      finished(false, "cancelled");
      return failed("cancelled", "cancelled");
    }
    finished(outcome.success, outcome.result);
    return answered(outcome);
  }
  const timeoutMs = toolTimeoutMs(call.tool!, deps.defaultTimeoutMs);
  // Register the wait before announcing the request: a client may answer at once.
  const settled = deps.results.wait(call.id, timeoutMs, deps.signal);
  deps.onRequest(call.name);
  deps.emit({ type: "tool_request", toolCallId: call.id, toolName: call.name, parameters: call.parameters, timeoutMs });
  const end = await settled;
  if (end.kind === "value") {
    finished(end.value.success, end.value.result);
    return answered(end.value);
  }
  const reason = end.kind === "timeout" ? `tool timeout after ${timeoutMs}ms` : "cancelled";
  finished(false, reason);
  return failed(reason, permission);
}

/** A server tool's outcome; a throw becomes a failed result (the model sees the message). */
async function runServerTool(tool: ServerTool, call: PlannedCall, signal: AbortSignal): Promise<ToolOutcome> {
  const startedAt = Date.now();
  try {
    return await tool.run(call.parameters, signal);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { success: false, result: message, truncated: false, durationMs: Date.now() - startedAt };
  }
}

/** The result text the model sees: cut head+tail to the budget, with the exit code of a failure. */
function contentForModel(outcome: ToolOutcome, maxTokens: number): string {
  let text = outcome.result;
  if (!outcome.success && outcome.exitCode !== undefined && outcome.exitCode !== 0) {
    text = text === "" ? `tool failed with exit code ${outcome.exitCode}` : `${text}\n[exit code ${outcome.exitCode}]`;
  }
  if (text === "") text = outcome.success ? "(no output)" : "tool failed";
  return truncateHeadTail(text, maxTokens).text;
}
