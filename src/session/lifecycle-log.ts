import type { SessionLogger } from "./ports.ts";
import type { SessionEvent } from "./types.ts";

/**
 * What of a session the server log shows at `info`: its start, its end and how each approval
 * ended (decided by the user, timed out). The rest is in the session's events and transcript.
 * Returns the observer of the session's numbered events.
 */
export function lifecycleLog(log: Pick<SessionLogger, "info">, ids: { sessionId: string; tenantId: string }): (event: SessionEvent) => void {
  /** Tool names of the approvals being waited for, by tool call id. */
  const asked = new Map<string, string>();
  return (event) => {
    switch (event.type) {
      case "session_started":
        log.info({ ...ids, model: event.model }, "session started");
        break;
      case "activity":
        if (event.approval) asked.set(event.approval.toolCallId, event.approval.toolName);
        break;
      case "approval_resolved": {
        const toolName = asked.get(event.toolCallId);
        asked.delete(event.toolCallId);
        const why = event.reason !== undefined ? { reason: event.reason } : {};
        log.info({ ...ids, toolCallId: event.toolCallId, ...(toolName ? { toolName } : {}), approved: event.approved, ...why }, "approval decided");
        break;
      }
      case "session_completed":
        log.info({ ...ids, status: event.status, reason: event.reason, turns: event.turns, usage: event.usage }, "session ended");
        break;
    }
  };
}
