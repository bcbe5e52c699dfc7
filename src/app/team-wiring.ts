import type { SessionExtension, SessionLink } from "../session/index.ts";
import type { ParentSession, Teams } from "../teams/index.ts";

/** The teams layer's view of a live session, over the session layer's link. */
export function parentSessionOf(link: SessionLink): ParentSession {
  return {
    sessionId: link.id,
    tenantId: link.tenantId,
    model: link.model,
    environmentId: link.environmentId,
    permissions: () => link.permissions(),
    clientTools: () => link.clientTools(),
    requestTool: (call) => link.emit({ type: "worker_tool_request", ...call }),
    askApproval: (approval) => link.emit({ type: "activity", state: "waiting_approval", detail: approval.toolCallId, approval }),
    route: (toolCallId, route) => link.route(toolCallId, route),
    teamStarted: (taskId) => link.emit({ type: "team_started", taskId }),
  };
}

/** `SessionDeps.extend`: every started session gets the team tools and ends its task with it. */
export function teamExtension(teams: Teams): (link: SessionLink) => SessionExtension {
  return (link) => teams.attachSession(parentSessionOf(link));
}
