import type { EventOf, SessionEvent } from "./events.ts";
import type { Approval, ApprovalDecision, OnApproval, ToolCall, Tools } from "./options.ts";
import { decision, type Request, toolResult } from "./requests.ts";

/** A tool call or an approval the session waits for. */
type Open = { kind: "tool"; call: ToolCall; parameters: Record<string, unknown> } | { kind: "approval"; approval: Approval };

/** An answer of this client: computed once, then sent (again only when the server asks again on a newer link). */
interface Answer {
  request?: Request;
  sending: boolean;
  /** The link generation it last went out on (-1: not yet). */
  sentOn: number;
}

/** Calls of the session's own agent end with its turn; a worker's calls (`worker/call` ids) live on. */
const ofWorker = (id: string): boolean => id.includes("/");

/**
 * Answers the session's tool requests with `tools` and its approvals with `onApproval`, each
 * exactly once per call: a call seen in a replay runs only if it is still open once the
 * replay is over (another client may have answered it), and a request the server sends again
 * after a break gets the answer computed before, not a second run.
 */
export class CallAnswers {
  readonly #tools: Tools;
  readonly #onApproval: OnApproval | undefined;
  readonly #send: (request: Request) => Promise<number>;
  readonly #generation: () => number;
  readonly #open = new Map<string, Open>();
  readonly #answers = new Map<string, Answer>();
  #caughtUp = false;

  constructor(init: { tools: Tools | undefined; onApproval: OnApproval | undefined; send: (request: Request) => Promise<number>; generation: () => number }) {
    this.#tools = init.tools ?? {};
    this.#onApproval = init.onApproval;
    this.#send = init.send;
    this.#generation = init.generation;
  }

  /** Open tool calls and approvals, as the events so far say. */
  pending(): { toolCalls: ToolCall[]; approvals: Approval[] } {
    const open = [...this.#open.values()];
    return {
      toolCalls: open.flatMap((o) => (o.kind === "tool" ? [o.call] : [])),
      approvals: open.flatMap((o) => (o.kind === "approval" ? [o.approval] : [])),
    };
  }

  /** A new event of the session (in order): opens and closes calls; a new one is answered once caught up. */
  event(ev: SessionEvent): void {
    const opened = this.#track(ev);
    if (opened && this.#caughtUp) this.#answer(opened, false);
  }

  /** A request the server sent again on re-attach: it is open, answer it (again). */
  resent(ev: SessionEvent): void {
    const open = openOf(ev);
    if (!open) return;
    const id = open.kind === "tool" ? open.call.toolCallId : open.approval.toolCallId;
    this.#open.set(id, open);
    this.#answer(open, true);
  }

  /** The replay is over: every call still open is answered. */
  caughtUp(): void {
    this.#caughtUp = true;
    for (const open of [...this.#open.values()]) this.#answer(open, false);
  }

  /** The link broke: what the next replay brings waits for its end. */
  broken(): void {
    this.#caughtUp = false;
  }

  /** The user's own decision (an approval without `onApproval`, or ahead of it). */
  decide(toolCallId: string, d: ApprovalDecision): Promise<void> {
    const answer: Answer = { request: decision(toolCallId, d), sending: false, sentOn: -1 };
    this.#answers.set(toolCallId, answer);
    return this.#deliver(answer);
  }

  #track(ev: SessionEvent): Open | undefined {
    switch (ev.type) {
      case "tool_request":
        this.#close(ev.toolCallId);
        break;
      case "tool_finished":
      case "tool_denied":
        this.#close(ev.toolCallId);
        return undefined;
      case "turn_complete":
        for (const id of [...this.#open.keys()]) if (!ofWorker(id) && (this.#open.get(id) as Open).kind === "approval") this.#close(id);
        for (const [id, o] of [...this.#open]) if (o.kind === "tool" && o.call.workerId === "") this.#close(id);
        return undefined;
    }
    const open = openOf(ev);
    if (open) this.#open.set(open.kind === "tool" ? open.call.toolCallId : open.approval.toolCallId, open);
    return open;
  }

  #close(id: string): void {
    this.#open.delete(id);
    this.#answers.delete(id);
  }

  #answer(open: Open, resent: boolean): void {
    const id = open.kind === "tool" ? open.call.toolCallId : open.approval.toolCallId;
    const known = this.#answers.get(id);
    if (known) {
      if (resent && known.request && !known.sending && known.sentOn < this.#generation()) void this.#deliver(known);
      return;
    }
    const compute = open.kind === "tool" ? this.#runTool(open) : this.#decideApproval(open.approval);
    if (!compute) return;
    const answer: Answer = { sending: false, sentOn: -1 };
    this.#answers.set(id, answer);
    void compute.then((request) => {
      answer.request = request;
      if (this.#answers.get(id) === answer) return this.#deliver(answer);
      return undefined;
    });
  }

  #deliver(answer: Answer): Promise<void> {
    answer.sending = true;
    return this.#send(answer.request as Request).then(
      (generation) => {
        answer.sending = false;
        answer.sentOn = generation;
      },
      () => {
        answer.sending = false;
      },
    );
  }

  #runTool(open: Extract<Open, { kind: "tool" }>): Promise<Request> | undefined {
    const tool = this.#tools[open.call.toolName];
    if (!tool) return undefined;
    const started = performance.now();
    return Promise.resolve()
      .then(() => tool.run(open.parameters, open.call))
      .then(
        (value) => toolResult(open.call.toolCallId, { ok: true, value }, performance.now() - started),
        (error: unknown) => toolResult(open.call.toolCallId, { ok: false, error }, performance.now() - started),
      );
  }

  #decideApproval(approval: Approval): Promise<Request> | undefined {
    const onApproval = this.#onApproval;
    if (!onApproval) return undefined;
    return Promise.resolve()
      .then(() => onApproval(approval))
      .then(
        (d) => decision(approval.toolCallId, d),
        () => decision(approval.toolCallId, false),
      );
  }
}

/** The call an event opens: a tool request, or an approval asked for by `waiting_approval`. */
function openOf(ev: SessionEvent): Open | undefined {
  if (ev.type === "tool_request") {
    return { kind: "tool", call: { toolCallId: ev.toolCallId, toolName: ev.toolName, workerId: ev.workerId }, parameters: ev.parameters ?? {} };
  }
  if (ev.type === "activity_update" && ev.state === "waiting_approval") return approvalOf(ev);
  return undefined;
}

function approvalOf(ev: EventOf<"activity_update">): Open | undefined {
  const a = ev.approval;
  // Servers before ApprovalRequest name only the call (`detail`).
  const approval: Approval | undefined = a
    ? { toolCallId: a.toolCallId, toolName: a.toolName, parameters: a.parameters ?? {}, reason: a.reason, timeoutMs: a.timeoutMs }
    : ev.detail
      ? { toolCallId: ev.detail, toolName: "", parameters: {}, reason: "", timeoutMs: 0 }
      : undefined;
  return approval ? { kind: "approval", approval } : undefined;
}
