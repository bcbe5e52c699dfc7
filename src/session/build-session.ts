import type { ClientTool } from "../agent/index.ts";
import type { ModelMessage, ResolvedModel } from "../models/index.ts";
import type { Principal, SessionDeps } from "./ports.ts";
import { Session } from "./session.ts";
import type { SessionRegistry } from "./session-registry.ts";
import type { RunningTurnInfo, SessionOrigin } from "./snapshot.ts";
import type { StoredHistory } from "./stored-history.ts";
import type { WaitingInput } from "./waiting-inputs.ts";

/** What a session is built from: a new one (start) or one rebuilt from its stored state. */
export interface SessionBuild {
  id: string;
  principal: Principal;
  model: ResolvedModel;
  origin: SessionOrigin;
  tools: ClientTool[];
  history: readonly ModelMessage[];
  pendingSystemContext?: string;
  /** For a session rebuilt from the store: its last seq. */
  lastSeq?: number;
  /** For a session rebuilt from the store or a fork: the number of its last turn. */
  lastTurn?: number;
  /** For a session rebuilt after a crash: the turn that was running then. */
  cutTurn?: RunningTurnInfo;
  /** For a session rebuilt from the store: the user messages that waited. */
  waitingInputs?: readonly WaitingInput[];
  /** For a session rebuilt from the store or a fork: what the store has of its messages. */
  stored?: StoredHistory;
}

/**
 * Builds a session with its agent and its extension (`SessionDeps.extend`: the teams' server
 * tools and end hook), the same way for a started session and for one rebuilt from the store,
 * so that server tools work after a restart too.
 */
export function buildSession(deps: SessionDeps, registry: SessionRegistry, build: SessionBuild): Session {
  const { id, principal, model, origin } = build;
  // The extension's link reaches the session through this binding, set right below.
  let session: Session | undefined;
  const extension = deps.extend?.({
    id,
    tenantId: principal.tenantId,
    model: model.name,
    environmentId: origin.environmentId,
    teams: origin.teams === true,
    permissions: () => agent.permissions,
    clientTools: () => agent.clientTools(),
    emit: (event) => session?.emit(event),
    route: (toolCallId, route) => session?.route(toolCallId, route) ?? (() => {}),
  });
  const agent = deps.createAgent({
    model,
    tools: build.tools,
    history: build.history,
    ...origin,
    ...(build.pendingSystemContext !== undefined ? { pendingSystemContext: build.pendingSystemContext } : {}),
    limits: deps.limits,
    ...(extension ? { serverTools: extension.serverTools } : {}),
    ...(extension?.liveTools ? { liveTools: extension.liveTools } : {}),
    onAgentError: (err) => deps.log.error({ err, sessionId: id }, "agent error"),
    ...(deps.spend ? { spend: deps.spend({ tenantId: principal.tenantId, sessionId: id }) } : {}),
  });
  session = new Session({
    id,
    principal,
    model: model.name,
    agent,
    deps,
    registry,
    origin,
    ...(build.lastSeq !== undefined ? { lastSeq: build.lastSeq } : {}),
    ...(build.lastTurn !== undefined ? { lastTurn: build.lastTurn } : {}),
    ...(build.cutTurn ? { cutTurn: build.cutTurn } : {}),
    ...(build.waitingInputs ? { waitingInputs: build.waitingInputs } : {}),
    ...(extension ? { extension } : {}),
    ...(build.stored ? { stored: build.stored } : {}),
  });
  return session;
}
