import { randomUUID } from "node:crypto";
import type { Agent, AgentLimits } from "../agent/index.ts";
import { toAgentMode } from "../agent/index.ts";
import { toRozError } from "../errors/index.ts";
import type { ClientAnswers } from "./client-answers.ts";
import { sessionErrorOf } from "./error-codes.ts";
import type { SessionDeps } from "./ports.ts";
import type { Rollbacks } from "./rollback.ts";
import type { StoreWriter } from "./store-writer.ts";
import type { TurnRunner } from "./turn-runner.ts";
import type { SessionCommand, SessionErrorCode } from "./types.ts";
import type { UserInputs } from "./user-inputs.ts";

/** Why a command carries more tools than one request (or, for start, a session) may; undefined when it does not. */
export function toolCapProblem(command: SessionCommand, limits: AgentLimits): string | undefined {
  const tools = command.type === "start" || command.type === "register_tools" || command.type === "user_message" ? command.tools : undefined;
  if (tools === undefined) return undefined;
  const perRequest = limits.maxToolsPerRequest ?? Number.POSITIVE_INFINITY;
  // "More than": a binary request's list was already cut to perRequest + 1 before decoding.
  if (tools.length > perRequest) return `${command.type}.tools has more than ${perRequest} tools; at most ${perRequest} are allowed per request`;
  const perSession = limits.maxTools ?? Number.POSITIVE_INFINITY;
  if (command.type === "start" && tools.length > perSession) return `start.tools has ${tools.length} tools; a session may hold at most ${perSession}`;
  return undefined;
}

export interface SessionRequestsInit {
  sessionId: string;
  tenantId: string;
  agent: Agent;
  deps: Pick<SessionDeps, "limits" | "log" | "persistence">;
  turns: TurnRunner;
  inputs: UserInputs;
  answers: ClientAnswers;
  writer: StoreWriter;
  /** A non-fatal in-band error for every attached stream; `requestId` names the request it answers. */
  error: (code: SessionErrorCode, message: string, requestId?: string) => void;
  /** Ends the session as `cancelled` (cancel_session). */
  cancel: (reason: string) => Promise<void>;
  /** Rolls back the last turns and tells every attached stream. */
  rollbacks: Pick<Rollbacks, "run">;
}

/** What a started session does with each client request (§1–§4), from any attached stream or from SendToSession. */
export class SessionRequests {
  readonly #init: SessionRequestsInit;

  constructor(init: SessionRequestsInit) {
    this.#init = init;
  }

  async handle(command: Exclude<SessionCommand, { type: "ping" }>): Promise<void> {
    const { agent, turns, inputs, answers, error } = this.#init;
    await turns.recordCutTurn();
    const tooMany = toolCapProblem(command, this.#init.deps.limits);
    if (tooMany !== undefined && command.type !== "start")
      return error("invalid_argument", tooMany, command.type === "user_message" ? command.messageId : undefined);
    switch (command.type) {
      case "start":
        return error("already_started", "the session has already started");
      case "resume":
        return error("already_started", "this stream is already attached to a session");
      case "user_message": {
        const mode = toAgentMode(command.aiMode) ?? this.#unknownMode(command.aiMode);
        inputs.submit({
          messageId: command.messageId || randomUUID(),
          content: command.content,
          context: command.context,
          mode,
          ...(command.tools ? { tools: command.tools } : {}),
          ...(command.systemContext !== undefined ? { systemContext: command.systemContext } : {}),
          ...(command.delivery !== undefined ? { delivery: command.delivery } : {}),
          ...(command.trace ? { trace: command.trace } : {}),
        });
        return;
      }
      case "tool_result":
        return answers.submitToolResult(command.toolCallId, command.outcome);
      case "permission_decision":
        return answers.decidePermission(command.toolCallId, command.approved, command.modifier);
      case "cancel_turn":
        if (command.clearQueue) inputs.dropAll();
        agent.cancelTurn(command.reason || "cancelled by client");
        return;
      case "cancel_session":
        return this.#init.cancel(command.reason || "cancelled by client");
      case "register_tools":
        try {
          agent.registerTools(command.source || undefined, command.tools, command.systemContext);
        } catch (err) {
          const { code, message } = sessionErrorOf(toRozError(err));
          return error(code, message);
        }
        if (!turns.running) this.#init.writer.storeState();
        return;
      case "rollback":
        return this.#init.rollbacks.run(command.turns).then(
          () => undefined,
          (err: unknown) => {
            const { code, message } = sessionErrorOf(toRozError(err));
            error(code, message);
          },
        );
      case "feedback":
        return this.#feedback(command.messageId, command.rating);
      case "unsupported":
        return;
    }
  }

  /** §2: an `ai_mode` this server does not know runs as `react`, as in v0.2; operators see it in the log. */
  #unknownMode(aiMode: string | undefined): "react" {
    this.#init.deps.log.warn({ sessionId: this.#init.sessionId, aiMode }, "unknown ai_mode: running the turn as react");
    return "react";
  }

  async #feedback(messageId: string, rating: string): Promise<void> {
    const { deps, tenantId, sessionId, error } = this.#init;
    if (messageId === "" || rating === "") return error("invalid_argument", "feedback needs message_id and rating");
    try {
      await deps.persistence.putFeedback(tenantId, sessionId, messageId, rating);
    } catch (err) {
      deps.log.error({ err }, "could not store feedback");
      error("internal", "could not store feedback");
    }
  }
}
