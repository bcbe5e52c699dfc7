import { RozError } from "../errors/index.ts";
import type { Principal, SessionDeps } from "./ports.ts";
import { buildSession } from "./build-session.ts";
import type { Session } from "./session.ts";
import type { SessionRegistry } from "./session-registry.ts";
import { loadSnapshot } from "./load-snapshot.ts";
import { originOf } from "./snapshot.ts";
import { isUuid } from "./uuid.ts";

/**
 * Where a session to re-attach to is: live in this process, live on another node that still
 * heart-beats (`nodeId`, reached through the relay), or only in the store (ended).
 */
export type LocatedSession = { kind: "live"; session: Session } | { kind: "remote"; nodeId: string } | { kind: "ended"; lastSeq: number };

/**
 * The answer for a session whose owner is another node that still counts as alive and cannot
 * be reached from here (no relay): retryable, since its sessions are adopted once it is gone.
 */
export const ownerWaitedFor = (nodeId: string): RozError =>
  new RozError("unavailable", `the session's node ${nodeId} still counts as running and is waited for until its heartbeat expires; retry`);

/**
 * Finds the session a client re-attaches to: a live one of this process, else the store's.
 * A live session whose owner stopped heart-beating (a previous run, a lost node) is adopted
 * (one compare-and-set on its node) and rebuilt from its stored state; its running turn was
 * cut, which the rebuilt session records as `interrupted` before anything else.
 * Unknown or another tenant's session: `not_found`.
 */
export class SessionDirectory {
  readonly #deps: SessionDeps;
  readonly #registry: SessionRegistry;
  /** Rebuilds in progress, so that concurrent attaches share one. */
  readonly #restoring = new Map<string, Promise<LocatedSession>>();

  constructor(deps: SessionDeps, registry: SessionRegistry) {
    this.#deps = deps;
    this.#registry = registry;
  }

  async find(principal: Principal, sessionId: string): Promise<LocatedSession> {
    const live = this.#registry.get(principal.tenantId, sessionId);
    if (live) return { kind: "live", session: live };
    const key = `${principal.tenantId}/${sessionId}`;
    let restoring = this.#restoring.get(key);
    if (!restoring) {
      restoring = this.#restore(principal, sessionId).finally(() => this.#restoring.delete(key));
      this.#restoring.set(key, restoring);
    }
    return restoring;
  }

  /**
   * The session to re-attach a stream of this process to: live here, or ended. One ending
   * right now counts as ended once its end is stored. A session on another node is
   * `unavailable` (reached only without a relay: the RPC layer relays remote sessions).
   */
  async findHere(principal: Principal, sessionId: string): Promise<Exclude<LocatedSession, { kind: "remote" }>> {
    if (!isUuid(sessionId)) throw new RozError("not_found", `session "${sessionId}" not found`);
    const located = await this.find(principal, sessionId);
    if (located.kind === "remote") throw ownerWaitedFor(located.nodeId);
    if (located.kind === "live" && located.session.ending) {
      await located.session.ending;
      return { kind: "ended", lastSeq: located.session.lastSeq };
    }
    return located;
  }

  async #restore(principal: Principal, sessionId: string): Promise<LocatedSession> {
    const notFound = new RozError("not_found", `session "${sessionId}" not found`);
    const stored = await this.#deps.persistence.findSession(principal.tenantId, sessionId);
    if (!stored) throw notFound;
    if (stored.status !== "active" && stored.status !== "detached") return { kind: "ended", lastSeq: stored.lastSeq };
    const again = this.#registry.get(principal.tenantId, sessionId);
    if (again) return { kind: "live", session: again };
    if (stored.ownerAlive && stored.nodeId !== undefined) return { kind: "remote", nodeId: stored.nodeId };
    const loaded = stored.state === undefined ? undefined : await loadSnapshot(this.#deps.persistence, principal.tenantId, sessionId, stored.state);
    const snapshot = loaded?.snapshot;
    const model = snapshot && this.#deps.models.resolve(snapshot.model);
    if (!loaded || !snapshot || !model) {
      // Nothing to continue from (a session of an older server, or a model no longer configured).
      await this.#deps.persistence.setStatus(principal.tenantId, sessionId, "error");
      return { kind: "ended", lastSeq: stored.lastSeq };
    }
    if (!(await this.#deps.persistence.adoptSession(principal.tenantId, sessionId, stored.nodeId))) {
      throw new RozError("unavailable", "another node took the session over; retry");
    }
    const session = buildSession(this.#deps, this.#registry, {
      id: sessionId,
      principal,
      model,
      origin: originOf(snapshot),
      tools: snapshot.tools,
      history: snapshot.history,
      ...(snapshot.pendingSystemContext !== undefined ? { pendingSystemContext: snapshot.pendingSystemContext } : {}),
      lastSeq: Math.max(stored.lastSeq, snapshot.lastSeq),
      lastTurn: snapshot.lastTurn ?? stored.turnCount ?? 0,
      ...(snapshot.runningTurn ? { cutTurn: snapshot.runningTurn } : {}),
      ...(snapshot.waitingInputs ? { waitingInputs: snapshot.waitingInputs } : {}),
      stored: loaded.stored,
    });
    this.#registry.add(session);
    // Detached until a stream attaches (the caller's, normally at once), so it cannot linger.
    session.waitForAttach();
    this.#deps.log.info({ sessionId, from: stored.nodeId }, "session adopted from the store");
    return { kind: "live", session };
  }
}
