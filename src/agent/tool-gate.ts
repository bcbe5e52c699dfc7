import type { PermissionEvaluator } from "./permissions.ts";
import type { PendingMap, Settled } from "./pending.ts";
import { argumentsFault, type JsonObject } from "../models/index.ts";
import { applyModifier } from "./modifier.ts";
import type { AgentEvent, ApprovalQuestion, ClientTool, PermissionAnswer, PermissionOutcome, ToolDeniedReason } from "./types.ts";
import type { ToolUse } from "./turn-messages.ts";

/** A tool call planned for dispatch; `tool` is undefined when the model named an unknown tool. */
export interface PlannedCall extends ToolUse {
  tool: ClientTool | undefined;
  /** Set when the model's arguments were not a JSON object: the call is refused (so is one nested too deep). */
  invalidArguments?: string;
}

/**
 * Whether a call may run: with how it was let through (and the arguments an approval
 * modified), or why not (told to the model).
 */
export type Verdict =
  | { run: true; permission: "allowed" | "approved"; parameters?: JsonObject }
  | { run: false; permission: Exclude<PermissionOutcome, "allowed" | "approved">; message: string };

/** The first, synchronous answer of the policy for one call: `ask` needs the client (`reason` says why). */
export type Screening = Verdict | { ask: true; reason: string };

/**
 * Applies the policy to each call (session-behaviour.md §3, §4): an unknown tool is
 * refused before any rule, `deny` is refused with the rule's reason, `allow` runs, and
 * `require_confirmation` must be asked.
 */
export function screenCalls(calls: readonly PlannedCall[], evaluator: PermissionEvaluator): Screening[] {
  return calls.map((call): Screening => {
    if (call.tool === undefined) {
      return { run: false, permission: "unknown_tool", message: `unknown tool "${call.name}": no such tool is available` };
    }
    const fault = argumentsFault(call.parameters, call.invalidArguments);
    if (fault !== undefined) return { run: false, permission: "invalid_arguments", message: `the arguments of tool "${call.name}" ${fault}` };
    const { policy, rule } = evaluator.decide(call.tool);
    if (policy === "allow") return { run: true, permission: "allowed" };
    const reason = rule.reason !== undefined && rule.reason !== "" ? rule.reason : undefined;
    if (policy === "deny") {
      return { run: false, permission: "policy_denied", message: `tool "${call.name}" is not permitted${reason !== undefined ? `: ${reason}` : ""}` };
    }
    return { ask: true, reason: rule.reason !== undefined && rule.reason !== "" ? rule.reason : `tool "${call.name}" requires your confirmation` };
  });
}

export interface ApprovalDeps {
  approvals: PendingMap<PermissionAnswer>;
  approvalTimeoutMs: number;
  signal: AbortSignal;
  /** Announces each question: `activity{waiting_approval, detail: toolCallId, approval}`. */
  onAsk: (question: ApprovalQuestion) => void;
  /** Reports how each question ended. */
  emit: (event: Extract<AgentEvent, { type: "approval_resolved" }>) => void;
}

/**
 * Resolves every `ask` by waiting for the client's decision, all questions at once (each
 * announced in call order). Fails closed: anything but an explicit approval — denial,
 * timeout, cancellation — refuses the call.
 */
export async function awaitApprovals(calls: readonly PlannedCall[], screenings: readonly Screening[], deps: ApprovalDeps): Promise<Verdict[]> {
  const waits = calls.map((call, i) => {
    const s = screenings[i]!;
    if (!("ask" in s)) return Promise.resolve(s);
    deps.onAsk({ toolCallId: call.id, toolName: call.name, parameters: call.parameters, reason: s.reason, timeoutMs: deps.approvalTimeoutMs });
    return deps.approvals.wait(call.id, deps.approvalTimeoutMs, deps.signal).then((settled): Verdict => {
      const verdict = verdictOf(call, settled, deps.approvalTimeoutMs);
      const reason = verdict.run ? undefined : deniedReasonOf(verdict.permission);
      deps.emit({ type: "approval_resolved", toolCallId: call.id, approved: verdict.run, ...(reason !== undefined ? { reason } : {}) });
      return verdict;
    });
  });
  return Promise.all(waits);
}

function verdictOf(call: PlannedCall, settled: Settled<PermissionAnswer>, timeoutMs: number): Verdict {
  if (settled.kind === "value" && settled.value.approved) {
    const modified = applyModifier(call.parameters, settled.value.modifier);
    if (modified.ok) return { run: true, permission: "approved", parameters: modified.parameters };
    return { run: false, permission: "invalid_arguments", message: `tool "${call.name}" was not run: ${modified.message}` };
  }
  if (settled.kind === "value") return { run: false, permission: "denied", message: `the user denied permission to run tool "${call.name}"` };
  if (settled.kind === "timeout") {
    return { run: false, permission: "approval_timeout", message: `permission to run tool "${call.name}" was not given within ${timeoutMs}ms` };
  }
  return { run: false, permission: "cancelled", message: "cancelled" };
}

/** The `tool_denied` reason of a refused call's permission outcome. */
export function deniedReasonOf(permission: Exclude<PermissionOutcome, "allowed" | "approved">): ToolDeniedReason {
  switch (permission) {
    case "policy_denied":
      return "policy";
    case "denied":
      return "approval_denied";
    default:
      return permission;
  }
}

/** True when some call needs the client's approval. */
export const needsApproval = (screenings: readonly Screening[]): boolean => screenings.some((s) => "ask" in s);
