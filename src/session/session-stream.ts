import { randomUUID } from "node:crypto";
import { toAgentMode } from "../agent/index.ts";
import { RozError, sessionRetryable, toRozError } from "../errors/index.ts";
import { AsyncQueue } from "./async-queue.ts";
import { sessionErrorOf } from "./error-codes.ts";
import type { Principal, SessionDeps } from "./ports.ts";
import { Session } from "./session.ts";
import type { SessionRegistry } from "./session-registry.ts";
import type { SequencedEvent, SessionCommand, SessionErrorCode, SessionEvent, StartCommand } from "./types.ts";
import { isUuid } from "./uuid.ts";

/** Why a command carries more tools than one request (or, for start, a session) may; undefined when it does not. */
function toolCapProblem(command: SessionCommand, limits: SessionDeps["limits"]): string | undefined {
  const tools = command.type === "start" || command.type === "register_tools" || command.type === "user_message" ? command.tools : undefined;
  if (tools === undefined) return undefined;
  const perRequest = limits.maxToolsPerRequest ?? Number.POSITIVE_INFINITY;
  if (tools.length > perRequest) return `${command.type}.tools has ${tools.length} tools; at most ${perRequest} are allowed per request`;
  const perSession = limits.maxTools ?? Number.POSITIVE_INFINITY;
  if (command.type === "start" && tools.length > perSession) return `start.tools has ${tools.length} tools; a session may hold at most ${perSession}`;
  return undefined;
}

/** What a stream yields: numbered events, then possibly a fatal error that ends the RPC. */
export type StreamItem = { kind: "event"; item: SequencedEvent } | { kind: "fatal"; error: RozError };

/**
 * The state machine of one StreamSession call (session-behaviour.md §1–§2): commands in,
 * ordered items out through `output`. Before `start`, stream-local answers (pong,
 * errors) carry sequence 0; after it, every event is numbered by the session.
 */
export class SessionStream {
  readonly output: AsyncIterable<StreamItem>;
  readonly #queue = new AsyncQueue<StreamItem>();
  readonly #deps: SessionDeps;
  readonly #registry: SessionRegistry;
  readonly #principal: Principal;
  #session: Session | undefined;
  #keepalive: NodeJS.Timeout | undefined;
  #startTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    deps: SessionDeps,
    registry: SessionRegistry,
    principal: Principal,
  ) {
    this.#deps = deps;
    this.#registry = registry;
    this.#principal = principal;
    this.output = this.#queue;
    this.#keepalive = setInterval(() => this.#sendKeepalive(), deps.keepaliveIntervalMs);
    const startTimeoutMs = deps.startTimeoutMs;
    if (startTimeoutMs !== undefined && startTimeoutMs > 0) {
      // An authenticated stream that never starts a session must not be held (and counted) forever.
      this.#startTimer = setTimeout(() => {
        this.#startTimer = undefined;
        if (!this.#session) void this.fail(new RozError("invalid_argument", `no start within ${startTimeoutMs} ms`));
      }, startTimeoutMs);
    }
  }

  /** Handles one client message. The caller awaits each before reading the next. */
  async handle(command: SessionCommand): Promise<void> {
    if (this.#closed) return;
    if (command.type === "ping") return this.#send({ type: "pong" });
    if (this.#refusedByKind(command.type)) return;
    const tooMany = toolCapProblem(command, this.#deps.limits);
    if (tooMany !== undefined) {
      if (command.type === "start") return this.fail(new RozError("invalid_argument", tooMany));
      return this.#error("invalid_argument", tooMany);
    }
    const session = this.#session;
    if (!session) {
      if (command.type === "start") return this.#start(command);
      if (command.type === "cancel_session") return this.close();
      return; // §1: everything else is ignored before start
    }
    switch (command.type) {
      case "user_message": {
        if (session.turnRunning) return this.#error("turn_in_progress", "a turn is already running; wait for turn_complete or cancel it");
        const mode = toAgentMode(command.aiMode) ?? this.#unknownMode(session, command.aiMode);
        session.startTurn({
          messageId: command.messageId || randomUUID(),
          content: command.content,
          context: command.context,
          mode,
          ...(command.tools ? { tools: command.tools } : {}),
          ...(command.systemContext !== undefined ? { systemContext: command.systemContext } : {}),
        });
        return;
      }
      case "tool_result": {
        const delivery = session.submitToolResult(command.toolCallId, command.outcome);
        if (delivery === "no_active_turn") return this.#error("no_active_turn", "no turn is running");
        if (delivery === "unknown") return this.#error("unknown_tool_call", `no open tool call "${command.toolCallId}"`);
        return;
      }
      case "permission_decision": {
        const delivery = session.decidePermission(command.toolCallId, command.approved, command.modifier);
        if (delivery === "no_active_turn") return this.#error("no_active_turn", "no turn is running");
        if (delivery === "unknown") return this.#error("unknown_tool_call", `no tool call "${command.toolCallId}" is waiting for approval`);
        return;
      }
      case "cancel_turn":
        session.agent.cancelTurn(command.reason || "cancelled by client");
        return;
      case "cancel_session":
        await this.#endSession("cancelled", command.reason || "cancelled by client");
        return this.close();
      case "register_tools":
        try {
          session.agent.registerTools(command.source || undefined, command.tools, command.systemContext);
        } catch (err) {
          const { code, message } = sessionErrorOf(toRozError(err));
          this.#error(code, message);
        }
        return;
      case "feedback":
        return this.#feedback(session, command.messageId, command.rating);
      case "unsupported":
        return;
    }
  }

  /**
   * The answers of §1 that a request's kind alone decides, for decoded and undecodable
   * requests alike: before start, `no_session` for what needs a session; after it, a second
   * start is `already_started`. True when the request was answered so.
   */
  #refusedByKind(type: SessionCommand["type"]): boolean {
    if (!this.#session) {
      if (type !== "user_message" && type !== "tool_result" && type !== "register_tools") return false;
      this.#error("no_session", "send start before " + type);
      return true;
    }
    if (type !== "start") return false;
    this.#error("already_started", "the session has already started");
    return true;
  }

  async #start(command: StartCommand): Promise<void> {
    this.#clearStartTimer();
    try {
      if (!this.#deps.allowSessionStart(this.#principal)) {
        throw new RozError("resource_exhausted", "too many sessions started; retry later");
      }
      if (command.environmentId !== "" && !isUuid(command.environmentId)) {
        throw new RozError("invalid_argument", `environment_id "${command.environmentId}" is not a UUID`);
      }
      const environment = await this.#deps.persistence.resolveEnvironment(this.#principal.tenantId, command.environmentId);
      if (!environment) throw new RozError("not_found", `environment "${command.environmentId}" not found`);
      const wanted = command.model || environment.defaultModel || undefined;
      const model = this.#deps.models.resolve(wanted);
      if (!model) throw new RozError("model_unavailable", `model "${wanted}" is not configured on this server`);
      const id = randomUUID();
      await this.#deps.persistence.createSession({
        id,
        tenantId: this.#principal.tenantId,
        environmentId: environment.id,
        model: model.name,
        ...(command.hostId ? { hostId: command.hostId } : {}),
      });
      // The extension's link reaches the session through this binding, set right below.
      let session: Session | undefined;
      const extension = this.#deps.extend?.({
        id,
        tenantId: this.#principal.tenantId,
        model: model.name,
        environmentId: environment.id,
        permissions: () => agent.permissions,
        clientTools: () => agent.clientTools(),
        emit: (event) => session?.emit(event),
        route: (toolCallId, route) => session?.route(toolCallId, route) ?? (() => {}),
      });
      const agent = this.#deps.createAgent({
        model,
        tools: command.tools,
        history: command.history,
        systemPrompt: command.systemPrompt,
        projectContext: command.projectContext,
        ...(environment.instructions ? { instructions: environment.instructions } : {}),
        maxContextTokens: command.maxContextTokens ?? model.contextWindow ?? this.#deps.defaultMaxContextTokens,
        permissions: [...environment.permissionRules, ...this.#deps.defaultPermissions],
        limits: this.#deps.limits,
        ...(extension ? { serverTools: extension.serverTools } : {}),
        onAgentError: (err) => this.#deps.log.error({ err, sessionId: id }, "agent error"),
      });
      session = new Session({ id, principal: this.#principal, model: model.name, agent, deps: this.#deps, ...(extension ? { extension } : {}) });
      this.#session = session;
      this.#registry.add(session);
      session.attach((item) => this.#queue.push({ kind: "event", item }), () => this.#endedElsewhere(session));
      session.emit({ type: "session_started", sessionId: id, model: model.name, permissions: agent.permissions });
      if (command.skipped.length > 0) this.#error("invalid_argument", skippedHistoryMessage(command.skipped));
      // The transport broke while the session was being created: it detaches like any other.
      if (this.#closed) this.transportBroken();
    } catch (err) {
      const error = toRozError(err);
      if (error.reason === "internal") this.#deps.log.error({ err }, "session start failed");
      await this.fail(error);
    }
  }

  /** §2: an `ai_mode` this server does not know runs as `react`, as in v0.2; operators see it in the log. */
  #unknownMode(session: Session, aiMode: string | undefined): "react" {
    this.#deps.log.warn({ sessionId: session.id, aiMode }, "unknown ai_mode: running the turn as react");
    return "react";
  }

  /**
   * A request of kind `type` that could not be decoded (a start that failed to decode goes
   * to `fail`). What it is decides the answer first, as for a decoded one (§1): before
   * start, `no_session` or nothing; a second start, `already_started`. Otherwise the
   * decoding error is reported in-band and the stream goes on.
   */
  rejectRequest(error: RozError, type: SessionCommand["type"]): void {
    if (this.#closed || this.#refusedByKind(type) || !this.#session) return;
    const { code, message } = sessionErrorOf(error);
    this.#error(code, message);
  }

  /** A fatal stream error (malformed bytes, size limit, a failed start): report it and end the session. */
  async fail(error: RozError): Promise<void> {
    if (this.#closed) return;
    this.#deps.metrics.error(error.reason);
    this.#send({ type: "session_error", ...sessionErrorOf(error) });
    this.#queue.push({ kind: "fatal", error });
    const session = this.#session;
    this.#session = undefined;
    this.close();
    if (session) await this.#registry.end(session, "error", error.message);
  }

  async #feedback(session: Session, messageId: string, rating: string): Promise<void> {
    if (messageId === "" || rating === "") return this.#error("invalid_argument", "feedback needs message_id and rating");
    try {
      await this.#deps.persistence.putFeedback(this.#principal.tenantId, session.id, messageId, rating);
    } catch (err) {
      this.#deps.log.error({ err }, "could not store feedback");
      this.#error("internal", "could not store feedback");
    }
  }

  /**
   * The client half-closed: let the running turn finish (cancelled if it needs the client's
   * answers, which can no longer come), then complete the session.
   */
  async requestsEnded(): Promise<void> {
    const session = this.#session;
    if (session) {
      session.closeInput();
      await session.idle();
      await this.#endSession("completed", "client closed the stream");
    }
    this.close();
  }

  /** The transport broke without a half-close: the session detaches and stays resumable. */
  transportBroken(): void {
    const session = this.#session;
    this.#session = undefined;
    if (session && session.status === "active") {
      session.detach(() => {
        void this.#registry.end(session, "cancelled", "detached session expired");
      });
    }
    this.close();
  }

  /** Ends the stream with a retryable UNAVAILABLE because the server is shutting down: the session detaches. */
  shutdown(): void {
    if (!this.#closed) this.#queue.push({ kind: "fatal", error: new RozError("shutting_down") });
    this.transportBroken();
  }

  /** The session was ended from outside this stream (REST DELETE): the stream ends with it. */
  #endedElsewhere(session: Session): void {
    // When this stream ends the session itself, it closes once the end is stored.
    if (this.#session !== session) return;
    this.#session = undefined;
    this.close();
  }

  async #endSession(status: "completed" | "cancelled", reason: string): Promise<void> {
    const session = this.#session;
    if (!session) return;
    this.#session = undefined;
    await this.#registry.end(session, status, reason);
  }

  /** Stops the keepalive and ends the output after what is queued. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearStartTimer();
    if (this.#keepalive) clearInterval(this.#keepalive);
    this.#keepalive = undefined;
    this.#queue.end();
  }

  #clearStartTimer(): void {
    if (this.#startTimer) clearTimeout(this.#startTimer);
    this.#startTimer = undefined;
  }

  #sendKeepalive(): void {
    const session = this.#session;
    // Before start the counts are those of an empty session with the default window.
    if (!session) return this.#send({ type: "keepalive", tokensUsed: 0, tokensMax: this.#deps.defaultMaxContextTokens });
    session.emit({ type: "keepalive", tokensUsed: session.agent.contextTokens(), tokensMax: session.agent.maxContextTokens });
  }

  /** A non-fatal in-band error; its `retryable` flag is the §8 table's. */
  #error(code: SessionErrorCode, message: string): void {
    this.#deps.metrics.error(code);
    this.#send({ type: "session_error", code, message, retryable: sessionRetryable(code, false) });
  }

  /** Stream-local answers go through the session (numbered) once it exists. */
  #send(event: SessionEvent): void {
    if (this.#session) this.#session.emit(event);
    else this.#queue.push({ kind: "event", item: { seq: 0, event } });
  }
}

/** How many skipped entries the one `SessionError` names before it only counts the rest. */
const SKIPPED_NAMED = 10;

/** §1: the one non-fatal error after `SessionStarted` that says what of `history` was left out. */
function skippedHistoryMessage(skipped: readonly string[]): string {
  const named = skipped.slice(0, SKIPPED_NAMED).join(", ");
  const more = skipped.length > SKIPPED_NAMED ? ` and ${skipped.length - SKIPPED_NAMED} more` : "";
  return `start.history: skipped ${named}${more} (kept: user and assistant messages; system messages join the system prompt)`;
}
