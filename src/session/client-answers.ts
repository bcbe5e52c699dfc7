import type { Agent, Delivery, ToolOutcome } from "../agent/index.ts";
import type { JsonObject } from "../models/index.ts";
import type { ClientWaits } from "./client-waits.ts";
import type { ClientAnswerRoute } from "./ports.ts";
import type { SessionErrorCode } from "./types.ts";

/**
 * A client's answers (tool results, approval decisions) go to the session's agent, else to a
 * route for calls that are not the agent's own (workers' calls). The first answer for an open
 * call wins; any later one, from this or another attached client, is an in-band error.
 */
export class ClientAnswers {
  readonly #agent: Agent;
  readonly #waits: ClientWaits;
  readonly #error: (code: SessionErrorCode, message: string, requestId: string) => void;
  readonly #routes = new Map<string, ClientAnswerRoute>();

  constructor(agent: Agent, waits: ClientWaits, error: (code: SessionErrorCode, message: string, requestId: string) => void) {
    this.#agent = agent;
    this.#waits = waits;
    this.#error = error;
  }

  /** Sends the client's answers for `toolCallId` to `route` (not the agent) until the returned function runs. */
  route(toolCallId: string, route: ClientAnswerRoute): () => void {
    this.#routes.set(toolCallId, route);
    return () => {
      if (this.#routes.get(toolCallId) === route) this.#routes.delete(toolCallId);
    };
  }

  submitToolResult(toolCallId: string, outcome: ToolOutcome): void {
    let delivery: Delivery = this.#agent.submitToolResult(toolCallId, outcome);
    if (delivery !== "accepted" && this.#routes.get(toolCallId)?.result(outcome) === true) delivery = "accepted";
    if (delivery === "no_active_turn") return this.#error("no_active_turn", "no turn is running", toolCallId);
    if (delivery === "unknown") return this.#error("unknown_tool_call", `no open tool call "${toolCallId}"`, toolCallId);
    this.#waits.answered("tool", toolCallId);
  }

  /** `modifier` is merged into an approved call's arguments. */
  decidePermission(toolCallId: string, approved: boolean, modifier?: JsonObject): void {
    let delivery: Delivery = this.#agent.decidePermission(toolCallId, approved, modifier);
    if (delivery !== "accepted" && this.#routes.get(toolCallId)?.decide(approved) === true) delivery = "accepted";
    if (delivery === "no_active_turn") return this.#error("no_active_turn", "no turn is running", toolCallId);
    if (delivery === "unknown") return this.#error("unknown_tool_call", `no tool call "${toolCallId}" is waiting for approval`, toolCallId);
    this.#waits.answered("approval", toolCallId);
  }
}
