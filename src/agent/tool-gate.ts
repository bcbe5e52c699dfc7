import type { PermissionEvaluator } from "./permissions.ts";
import type { PendingMap } from "./pending.ts";
import type { ClientTool, PermissionOutcome } from "./types.ts";
import type { ToolUse } from "./turn-messages.ts";

/** A tool call planned for dispatch; `tool` is undefined when the model named an unknown tool. */
export interface PlannedCall extends ToolUse {
  tool: ClientTool | undefined;
  /** Set when the model's arguments were not a JSON object: the call is refused. */
  invalidArguments?: string;
}

/** Whether a call may run: with how it was let through, or why not (told to the model). */
export type Verdict =
  | { run: true; permission: "allowed" | "approved" }
  | { run: false; permission: Exclude<PermissionOutcome, "allowed" | "approved">; message: string };

/** The first, synchronous answer of the policy for one call: `ask` needs the client. */
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
    if (call.invalidArguments !== undefined) {
      return {
        run: false,
        permission: "unknown_tool",
        message: `the arguments of tool "${call.name}" are not a JSON object: ${call.invalidArguments.slice(0, 200)}`,
      };
    }
    const { policy, rule } = evaluator.decide(call.tool);
    if (policy === "allow") return { run: true, permission: "allowed" };
    if (policy === "deny") {
      const reason = rule.reason !== undefined && rule.reason !== "" ? `: ${rule.reason}` : "";
      return { run: false, permission: "policy_denied", message: `tool "${call.name}" is not permitted${reason}` };
    }
    return { ask: true, reason: rule.reason !== undefined && rule.reason !== "" ? rule.reason : `tool "${call.name}" needs your approval` };
  });
}

export interface ApprovalDeps {
  approvals: PendingMap<boolean>;
  approvalTimeoutMs: number;
  signal: AbortSignal;
  /** Announces each question: `activity{waiting_approval, detail: toolCallId}`. */
  onAsk: (call: PlannedCall, reason: string) => void;
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
    deps.onAsk(call, s.reason);
    return deps.approvals.wait(call.id, deps.approvalTimeoutMs, deps.signal).then((settled): Verdict => {
      if (settled.kind === "value" && settled.value) return { run: true, permission: "approved" };
      if (settled.kind === "value") return { run: false, permission: "denied", message: `the user denied permission to run tool "${call.name}"` };
      if (settled.kind === "timeout") {
        return { run: false, permission: "approval_timeout", message: `permission to run tool "${call.name}" was not given within ${deps.approvalTimeoutMs}ms` };
      }
      return { run: false, permission: "cancelled", message: "cancelled" };
    });
  });
  return Promise.all(waits);
}

/** True when some call needs the client's approval. */
export const needsApproval = (screenings: readonly Screening[]): boolean => screenings.some((s) => "ask" in s);
