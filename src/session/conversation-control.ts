import { RozError } from "../errors/index.ts";
import { openFork } from "./fork.ts";
import type { Principal, SessionDeps } from "./ports.ts";
import type { RollbackResult } from "./rollback.ts";
import type { SessionDirectory } from "./session-directory.ts";
import type { SessionRegistry } from "./session-registry.ts";
import { isUuid } from "./uuid.ts";

export type { RollbackResult } from "./rollback.ts";

/**
 * Fork and rollback for callers without a stream (REST, §11). A rollback reaches the session
 * live in this process, one only in the store, which this process takes over (as a re-attach
 * would) and leaves detached, or one live on another node through the caller's `onOwner`.
 */
export class ConversationControl {
  readonly #deps: SessionDeps;
  readonly #registry: SessionRegistry;
  readonly #directory: SessionDirectory;

  constructor(deps: SessionDeps, registry: SessionRegistry, directory: SessionDirectory) {
    this.#deps = deps;
    this.#registry = registry;
    this.#directory = directory;
  }

  /** Opens a fork (see `openFork`), detached until a client attaches to it; resolves with its id. */
  async fork(principal: Principal, sessionId: string, throughTurn?: number): Promise<string> {
    const from = { sessionId, ...(throughTurn !== undefined ? { throughTurn } : {}) };
    const session = await openFork(this.#deps, this.#registry, principal, from, true);
    session.waitForAttach();
    return session.id;
  }

  /**
   * Rolls back the session's last `turns` turns (see `Session.rollback`); a session live on
   * another node is asked there through `onOwner` (`unavailable` without one).
   */
  async rollback(principal: Principal, sessionId: string, turns: number, onOwner?: (node: string) => Promise<RollbackResult>): Promise<RollbackResult> {
    if (!isUuid(sessionId)) throw new RozError("not_found", `session "${sessionId}" not found`);
    const located = await this.#directory.find(principal, sessionId);
    if (located.kind === "remote") {
      if (!onOwner) throw new RozError("unavailable", "the session is running on another node; retry on that node");
      return onOwner(located.nodeId);
    }
    if (located.kind === "ended") throw new RozError("session_ended", `session "${sessionId}" has ended`);
    return located.session.rollback(turns);
  }
}
