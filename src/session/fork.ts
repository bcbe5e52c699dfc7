import { randomUUID } from "node:crypto";
import type { Budget } from "../domain/index.ts";
import { RozError } from "../errors/index.ts";
import { buildSession } from "./build-session.ts";
import type { Principal, SessionDeps } from "./ports.ts";
import type { Session } from "./session.ts";
import type { SessionRegistry } from "./session-registry.ts";
import { loadSnapshot } from "./load-snapshot.ts";
import { originOf } from "./snapshot.ts";
import { StoredHistory, stateWrite } from "./stored-history.ts";
import { conversationOf } from "./transcript.ts";
import type { StartCommand } from "./types.ts";
import { isUuid } from "./uuid.ts";

export type ForkFrom = NonNullable<StartCommand["fork"]>;

/** Why a fork's `start` carries what only the source decides (§11); undefined when it does not. */
export function forkStartProblem(command: StartCommand): string | undefined {
  const own = [
    command.environmentId !== "" && "environment_id",
    command.model !== undefined && "model",
    command.tools.length > 0 && "tools",
    command.history.length + command.systemPrompt.length + command.skipped.length > 0 && "history",
  ].filter((name) => name !== false);
  return own.length > 0 ? `start.fork takes the source's ${own.join(", ")}: send them without fork` : undefined;
}

/**
 * Opens a new session of `principal`'s tenant as a copy of another one's conversation (§11):
 * the source's environment, tools, model and permissions, its start history and its turns
 * through `throughTurn` (default: its last ended turn), stored as copies marked with where
 * they came from. Rolled-back turns are copied too (marked so, for the transcript), but the
 * model does not see them. The fork's own turns are numbered on from `throughTurn`; the
 * source is only read. Refusals throw: `not_found` (unknown or another tenant's source),
 * `invalid_argument` (turn 0, or one that has not ended), `model_unavailable`.
 */
export async function openFork(
  deps: SessionDeps,
  registry: SessionRegistry,
  principal: Principal,
  from: ForkFrom,
  /** Stored `detached` (no stream attaches at once: REST); else `active`. */
  detached = false,
  /** The new session's title, metadata and budget (a start's), as for any new session. */
  labels: { title?: string; metadata?: Record<string, string>; budget?: Budget } = {},
): Promise<Session> {
  if (!deps.allowSessionStart(principal)) throw new RozError("resource_exhausted", "too many sessions started; retry later");
  const { tenantId } = principal;
  const notFound = new RozError("not_found", `session "${from.sessionId}" not found`);
  if (!isUuid(from.sessionId)) throw notFound;
  if (from.throughTurn === 0) throw new RozError("invalid_argument", "fork.through_turn must be at least 1");
  const [source, turns] = await Promise.all([deps.persistence.findSession(tenantId, from.sessionId), deps.persistence.listTurns(tenantId, from.sessionId)]);
  if (!source || !turns) throw notFound;
  const snapshot = source.state === undefined ? undefined : (await loadSnapshot(deps.persistence, tenantId, from.sessionId, source.state))?.snapshot;
  if (!snapshot) throw new RozError("invalid_argument", `session "${from.sessionId}" has no stored state to fork`);
  const model = deps.models.resolve(snapshot.model);
  if (!model) throw new RozError("model_unavailable", `model "${snapshot.model}" is not configured on this server`);
  const through = from.throughTurn ?? turns.at(-1)?.turn ?? 0;
  if (from.throughTurn !== undefined && !turns.some((t) => t.turn === through)) {
    throw new RozError("invalid_argument", `turn ${through} of session "${from.sessionId}" has not ended`);
  }
  const copied = turns.filter((t) => t.turn <= through);
  const origin = originOf(snapshot);
  const history = [...(origin.startHistory ?? []), ...conversationOf(copied.filter((t) => !t.rolledBack))];
  const id = randomUUID();
  const stored = new StoredHistory();
  const { write, commit } = await stateWrite(stored, {
    version: 1,
    model: model.name,
    ...origin,
    tools: snapshot.tools,
    history,
    lastSeq: 0,
    lastTurn: through,
  });
  await deps.persistence.forkSession(
    { id, tenantId, environmentId: snapshot.environmentId, model: model.name, ...(detached ? { status: "detached" as const } : {}), ...labels },
    copied.map((t) => ({ record: t, origin: { sessionId: from.sessionId, turn: t.turn } })),
    write,
  );
  commit();
  const session = buildSession(deps, registry, { id, principal, model, origin, tools: snapshot.tools, history, lastTurn: through, stored });
  registry.add(session);
  return session;
}
