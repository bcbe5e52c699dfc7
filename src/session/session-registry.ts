import type { Session } from "./session.ts";

/**
 * The live sessions of this process, by id. Used to end sessions from REST, on
 * shutdown, and to count what is still running (tests check it returns to zero).
 */
export class SessionRegistry {
  readonly #sessions = new Map<string, Session>();

  add(session: Session): void {
    this.#sessions.set(session.id, session);
  }

  /** Ends `session` (see `Session.end`) and forgets it once that has settled: every end goes through here. */
  async end(session: Session, ...args: Parameters<Session["end"]>): Promise<void> {
    try {
      await session.end(...args);
    } finally {
      if (this.#sessions.get(session.id) === session) this.#sessions.delete(session.id);
    }
  }

  /** Stores and detaches `session` for the next process (see `Session.suspend`), and forgets it. */
  async suspend(session: Session): Promise<void> {
    try {
      await session.suspend();
    } finally {
      if (this.#sessions.get(session.id) === session) this.#sessions.delete(session.id);
    }
  }

  /** Undefined for unknown ids and for another tenant's sessions. */
  get(tenantId: string, sessionId: string): Session | undefined {
    const session = this.#sessions.get(sessionId);
    return session?.principal.tenantId === tenantId ? session : undefined;
  }

  get size(): number {
    return this.#sessions.size;
  }

  all(): Session[] {
    return [...this.#sessions.values()];
  }
}
