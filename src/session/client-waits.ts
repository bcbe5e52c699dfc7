import type { LoggedEvent, SessionEvent } from "./types.ts";

/**
 * What the running turn waits for from the client: its open tool requests and approval
 * requests (re-sent to a stream that re-attaches, §6), and whether any answer is still
 * owed. When the last client half-closed while one is owed, `onUnanswerable` runs: the
 * answer can no longer come.
 */
export class ClientWaits {
  readonly #onUnanswerable: () => void;
  /** Tool requests and approval requests of the running turn, by `tool:`/`approval:` id. */
  readonly #open = new Map<string, LoggedEvent>();
  /** The running turn waits for the client: a tool result or a permission decision. */
  #awaitingClient = false;
  /** The last attached client half-closed: nothing it could answer will come any more. */
  #inputClosed = false;

  constructor(onUnanswerable: () => void) {
    this.#onUnanswerable = onUnanswerable;
  }

  /** Follows a kept event of the session. */
  track(event: SessionEvent, logged: LoggedEvent): void {
    if (event.type === "tool_request") {
      this.#awaitingClient = true;
      this.#open.set(`tool:${event.toolCallId}`, logged);
    } else if (event.type === "activity" && event.state === "waiting_approval") {
      this.#awaitingClient = true;
      this.#open.set(`approval:${event.detail}`, logged);
    } else if (event.type === "turn_complete") {
      this.#awaitingClient = false;
      this.#open.clear();
    } else if (event.type === "activity" && (event.state === "thinking" || event.state === "idle")) {
      this.#awaitingClient = false;
    }
    this.#checkAnswerable();
  }

  /** The client answered a tool call (`tool`) or an approval (`approval`). */
  answered(kind: "tool" | "approval", toolCallId: string): void {
    this.#open.delete(`${kind}:${toolCallId}`);
  }

  /** The requests still open by the agent's account, numbered at or before `afterSeq`, in seq order. */
  resent(waits: { toolCalls: readonly string[]; approvals: readonly string[] }, afterSeq: number): LoggedEvent[] {
    return [...waits.toolCalls.map((id) => `tool:${id}`), ...waits.approvals.map((id) => `approval:${id}`)]
      .map((key) => this.#open.get(key))
      .filter((e): e is LoggedEvent => e !== undefined && e.seq <= afterSeq)
      .sort((a, b) => a.seq - b.seq);
  }

  /** Whether the last client's requests have ended; checked at once when they have. */
  set inputClosed(closed: boolean) {
    this.#inputClosed = closed;
    this.#checkAnswerable();
  }

  #checkAnswerable(): void {
    if (this.#inputClosed && this.#awaitingClient) this.#onUnanswerable();
  }
}
