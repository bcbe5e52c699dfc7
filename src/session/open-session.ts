import { randomUUID } from "node:crypto";
import { RozError } from "../errors/index.ts";
import { buildSession } from "./build-session.ts";
import { forkStartProblem, openFork } from "./fork.ts";
import type { Principal, SessionDeps } from "./ports.ts";
import { toolCapProblem } from "./requests.ts";
import type { Session } from "./session.ts";
import type { SessionRegistry } from "./session-registry.ts";
import type { StartCommand } from "./types.ts";
import { isUuid } from "./uuid.ts";

/**
 * Opens a new session for `start` (§1; a fork's, §11, see `openFork`): checks the request, the start rate, the environment
 * and the model, creates it in the store, builds it, registers it and stores its first state.
 * Every refusal throws (the stream reports it as fatal); nothing is created then.
 */
export async function openSession(deps: SessionDeps, registry: SessionRegistry, principal: Principal, command: StartCommand): Promise<Session> {
  const labels = {
    ...(command.title !== undefined ? { title: command.title } : {}),
    ...(command.metadata !== undefined ? { metadata: command.metadata } : {}),
    ...(command.budget !== undefined ? { budget: command.budget } : {}),
  };
  if (command.fork) {
    const problem = forkStartProblem(command);
    if (problem !== undefined) throw new RozError("invalid_argument", problem);
    return openFork(deps, registry, principal, command.fork, false, labels);
  }
  const tooMany = toolCapProblem(command, deps.limits);
  if (tooMany !== undefined) throw new RozError("invalid_argument", tooMany);
  if (!deps.allowSessionStart(principal)) throw new RozError("resource_exhausted", "too many sessions started; retry later");
  if (command.environmentId !== "" && !isUuid(command.environmentId)) {
    throw new RozError("invalid_argument", `environment_id "${command.environmentId}" is not a UUID`);
  }
  const environment = await deps.persistence.resolveEnvironment(principal.tenantId, command.environmentId);
  if (!environment) throw new RozError("not_found", `environment "${command.environmentId}" not found`);
  const wanted = command.model || environment.defaultModel || undefined;
  const model = deps.models.resolve(wanted);
  if (!model) throw new RozError("model_unavailable", `model "${wanted}" is not configured on this server`);
  const id = randomUUID();
  await deps.persistence.createSession({
    id,
    tenantId: principal.tenantId,
    environmentId: environment.id,
    model: model.name,
    ...(command.hostId ? { hostId: command.hostId } : {}),
    ...labels,
  });
  const origin = {
    environmentId: environment.id,
    projectContext: command.projectContext,
    ...(environment.instructions ? { instructions: environment.instructions } : {}),
    ...(command.systemPrompt.length > 0 ? { systemPrompt: command.systemPrompt } : {}),
    maxContextTokens: command.maxContextTokens ?? model.contextWindow ?? deps.defaultMaxContextTokens,
    permissions: [...environment.permissionRules, ...deps.defaultPermissions],
    ...((environment.teams ?? deps.teamsDefault) ? { teams: true } : {}),
    ...(command.history.length > 0 ? { startHistory: command.history } : {}),
  };
  const session = buildSession(deps, registry, { id, principal, model, origin, tools: command.tools, history: command.history });
  registry.add(session);
  session.storeState();
  return session;
}

/** How many skipped entries the one `SessionError` names before it only counts the rest. */
const SKIPPED_NAMED = 10;

/** §1: the one non-fatal error after `SessionStarted` that says what of `history` was left out. */
export function skippedHistoryMessage(skipped: readonly string[]): string {
  const named = skipped.slice(0, SKIPPED_NAMED).join(", ");
  const more = skipped.length > SKIPPED_NAMED ? ` and ${skipped.length - SKIPPED_NAMED} more` : "";
  return `start.history: skipped ${named}${more} (kept: user and assistant messages; system messages join the system prompt)`;
}
