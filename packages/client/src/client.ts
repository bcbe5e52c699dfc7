import { RozError } from "./errors.ts";
import type { TeamEvent } from "./events.ts";
import { bidiLink, pairLink } from "./link.ts";
import type { AttachSessionOptions, RozClientOptions, StartSessionOptions } from "./options.ts";
import { type Connection, openConnection, type Platform } from "./platform.ts";
import { toolSchemas } from "./requests.ts";
import { Session, type SessionInit } from "./session.ts";
import { watchTeam } from "./team.ts";

const DEFAULT_RECONNECT_TIMEOUT_MS = 120_000;
const DEFAULT_KEEP_EVENTS = 10_000;

/**
 * A roz server as this program talks to it: start or attach sessions, watch teams. One
 * connection (HTTP/2 in Node) carries every call; `close()` lets go of it. The platform
 * (Node or browser) comes from the entry point: `@roz/client` picks it by export condition.
 */
export class RozClientBase {
  readonly #options: RozClientOptions;
  readonly #connection: Connection;
  /** Sessions opened here and not yet let go of: `close()` detaches them. */
  readonly #sessions = new Set<Session>();

  constructor(options: RozClientOptions, platform: Platform) {
    if (!options.baseUrl) throw new RozError("invalid_argument", "RozClient needs a baseUrl");
    this.#options = options;
    this.#connection = openConnection(platform, options);
  }

  /** The transport sessions use (`grpc`, `connect` or `grpc-web`). */
  get transport(): Connection["kind"] {
    return this.#connection.kind;
  }

  /**
   * Opens a new session; resolves once `session_started` arrived. A refused start (unknown
   * model or environment, bad arguments, no credentials) rejects with its RozError.
   */
  async startSession(options: StartSessionOptions = {}): Promise<Session> {
    const { tools, onApproval, ...start } = options;
    // A fork takes its source's tool schemas (the server refuses new ones with it); the runners stay here.
    const schemas = start.fork === undefined ? toolSchemas(tools) : [];
    const session = this.#session({ start: { environmentId: "", ...start, tools: schemas } }, tools, onApproval);
    await session.ready;
    return session;
  }

  /**
   * Attaches to an existing session after `afterSeq` (default 0: every event the server
   * keeps); resolves once the replay is over. Rejects with `not_found`, `invalid_argument`
   * (after_seq beyond the session's last) or `events_expired`.
   */
  async attachSession(sessionId: string, options: AttachSessionOptions = {}): Promise<Session> {
    const session = this.#session({ sessionId, afterSeq: options.afterSeq ?? 0 }, options.tools, options.onApproval);
    await session.ready;
    return session;
  }

  /** A task's team events from `afterSeq` on, until the task is done (see `watchTeam`). */
  watchTeam(taskId: string, options: { afterSeq?: number; signal?: AbortSignal } = {}): AsyncGenerator<TeamEvent> {
    return watchTeam(this.#connection, taskId, { ...options, reconnectTimeoutMs: this.#reconnectTimeoutMs });
  }

  /** Closes the client's connections (sessions still attached break, and stay on the server). */
  close(): void {
    for (const session of this.#sessions) session.detach();
    this.#connection.close();
  }

  get #reconnectTimeoutMs(): number {
    return this.#options.reconnectTimeoutMs ?? DEFAULT_RECONNECT_TIMEOUT_MS;
  }

  #session(target: SessionInit["target"], tools: SessionInit["tools"], onApproval: SessionInit["onApproval"]): Session {
    const connection = this.#connection;
    const bidi = connection.kind === "grpc";
    const session = new Session({
      target,
      open: (t, sessionId) => (bidi ? bidiLink(connection, t) : pairLink(connection, t, sessionId)),
      acknowledged: !bidi,
      tools,
      onApproval,
      reconnectTimeoutMs: this.#reconnectTimeoutMs,
      keepEvents: this.#options.keepEvents ?? DEFAULT_KEEP_EVENTS,
      startSession: (o) => this.startSession(o),
    });
    this.#sessions.add(session);
    void session.closed.then(() => this.#sessions.delete(session));
    return session;
  }
}
