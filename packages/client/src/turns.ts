import { RozError } from "./errors.ts";
import type { SessionEvent } from "./events.ts";
import { InputState } from "./gen/roz/v1/agent_pb.js";
import { type Running, resultOf, type Turn, turnError } from "./turn.ts";

/** In-band refusals of a message (by `request_id`): the message never joined a turn. */
const refusals = new Set(["turn_in_progress", "resource_exhausted", "invalid_argument", "no_session", "session_ended"]);

/**
 * Routes the session's events to the turns this client's messages opened or joined: a message
 * is its own turn once `STARTED`, part of another once `STEERED`; events without a message id
 * (tool calls, activity, errors) belong to the turn running when they come.
 */
export class TurnRouter {
  readonly #turns = new Map<string, Turn>();
  #running: Running | undefined;

  /**
   * Messages sent on a link that may have broken before the server read them: no event names
   * them yet. `generation` is the link they went out on; `resend` sends them again.
   */
  readonly unconfirmed = new Map<string, { generation: number; resend: () => void }>();

  add(turn: Turn): void {
    this.#turns.set(turn.messageId, turn);
  }

  /** The running turn's message id, if a turn runs. */
  get runningId(): string | undefined {
    return this.#running?.id;
  }

  event(ev: SessionEvent): void {
    switch (ev.type) {
      case "input_update":
        return this.#input(ev.messageId, ev.state, ev.turnMessageId, ev);
      case "text_delta":
      case "thinking_delta": {
        this.unconfirmed.delete(ev.messageId);
        const running = this.#runningFor(ev.messageId);
        if (ev.type === "text_delta") running.text += ev.content;
        else running.thinking += ev.content;
        return this.#toTurn(ev.messageId, ev);
      }
      case "error": {
        if (ev.requestId && this.#turns.has(ev.requestId)) {
          this.unconfirmed.delete(ev.requestId);
          const turn = this.#turns.get(ev.requestId) as Turn;
          turn.push(ev);
          if (this.#running?.id === ev.requestId) this.#running.error = turnError(ev);
          if (refusals.has(ev.code) && turn.turnId === turn.messageId && this.#running?.id !== turn.messageId) this.#settle(turn, turnError(ev));
          return;
        }
        if (this.#running) this.#running.error = turnError(ev);
        return this.#toTurn(this.#running?.id, ev);
      }
      case "turn_complete": {
        this.unconfirmed.delete(ev.messageId);
        const running = this.#running?.id === ev.messageId ? this.#running : undefined;
        this.#running = undefined;
        this.#toTurn(ev.messageId, ev);
        const result = resultOf(ev, running);
        for (const turn of this.#turnsOf(ev.messageId)) {
          turn.complete(result);
          this.#turns.delete(turn.messageId);
        }
        return;
      }
      default:
        return this.#toTurn(this.#running?.id, ev);
    }
  }

  /** The session is gone: every turn still waiting fails with `error`. */
  endAll(error: RozError): void {
    for (const turn of this.#turns.values()) turn.fail(error);
    this.#turns.clear();
    this.unconfirmed.clear();
  }

  #input(messageId: string, state: InputState, joined: string, ev: SessionEvent): void {
    this.unconfirmed.delete(messageId);
    const turn = this.#turns.get(messageId);
    if (state === InputState.STARTED) this.#running = { id: messageId, text: "", thinking: "" };
    if (state === InputState.STEERED && turn) turn.turnId = joined;
    turn?.push(ev);
    if (state === InputState.DROPPED && turn) this.#settle(turn, new RozError("dropped", "the message was dropped from the queue"));
  }

  #settle(turn: Turn, error: RozError): void {
    turn.fail(error);
    this.#turns.delete(turn.messageId);
  }

  #runningFor(messageId: string): Running {
    if (this.#running?.id !== messageId) this.#running = { id: messageId, text: "", thinking: "" };
    return this.#running;
  }

  #turnsOf(turnId: string | undefined): Turn[] {
    const out: Turn[] = [];
    if (turnId === undefined) return out;
    for (const t of this.#turns.values()) if (t.turnId === turnId) out.push(t);
    return out;
  }

  #toTurn(turnId: string | undefined, ev: SessionEvent): void {
    if (turnId === undefined) return;
    for (const t of this.#turns.values()) if (t.turnId === turnId) t.push(ev);
  }
}
