import { RozError, type Session, type SessionStatus, type StartSessionOptions } from "@roz/client";
import type { AgentClient } from "../api/rpc.ts";
import { browserTools, type ToolHost } from "./browser-tools.ts";
import { loadState, saveState } from "./saved-state.ts";
import { addUserMessage, applyEvent, type Delivery, emptyState, type SessionState } from "./timeline.ts";

export type StartInit = Omit<StartSessionOptions, "tools" | "onApproval">;

/** Where the attached stream is. `unsupported`: the server has no AttachSession (UNIMPLEMENTED). */
export type LinkStatus = "connecting" | "live" | "reconnecting" | "ended" | "unsupported" | "failed";

export interface Question {
  toolCallId: string;
  question: string;
}

/** Where to go on from when the server no longer keeps the events after this tab's seq. */
type OnExpired = () => Promise<{ items: SessionState["items"]; lastSeq: number } | undefined>;

/** An existing session (re-attached from the seq this tab saw), or a new one, with the browser tools or without. */
type Target = { sessionId: string; onExpired?: OnExpired } | { start: StartInit; browserTools: boolean; firstMessage?: string };

/** UNIMPLEMENTED: a server without AttachSession. */
const UNIMPLEMENTED = 12;

/**
 * One session as this tab sees it, held by @roz/client (which re-attaches after breaks, from
 * the last seq, and runs the browser tools once per call). The view state is saved per session
 * in sessionStorage with its seq, so a reload re-attaches after exactly what it already drew.
 */
export class LiveSession {
  state: SessionState;
  status: LinkStatus = "connecting";
  detail = "";
  questions: Question[] = [];
  readonly #client: AgentClient;
  readonly #listeners = new Set<() => void>();
  readonly #answers = new Map<string, (answer: string) => void>();
  readonly #target: Target;
  #session: Session | undefined;
  #closed = false;
  #saveTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(client: AgentClient, target: Target) {
    this.#client = client;
    this.#target = target;
    this.state = "start" in target ? { ...emptyState(), answersTools: target.browserTools } : (loadState(target.sessionId) ?? emptyState(target.sessionId));
    addEventListener("pagehide", this.#saveNow);
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(): void {
    for (const l of this.#listeners) l();
  }

  readonly #saveNow = (): void => {
    clearTimeout(this.#saveTimer);
    this.#saveTimer = undefined;
    if (this.state.sessionId) saveState(this.state);
  };

  #update(next: SessionState): void {
    this.state = next;
    this.#saveTimer ??= setTimeout(this.#saveNow, 200);
    this.#emit();
  }

  #notice(text: string): void {
    this.#update({ ...this.state, items: [...this.state.items, { kind: "notice", tone: "error", text }] });
  }

  /** Attaches (or starts) and follows the session until it ends or `close()`. */
  async run(): Promise<void> {
    const host: ToolHost = { ask: (question, toolCallId) => this.#ask(question, toolCallId) };
    const tools = this.state.answersTools ? browserTools(host) : undefined;
    while (!this.#closed) {
      let session: Session;
      try {
        if ("start" in this.#target) {
          session = await this.#client.startSession({ ...this.#target.start, tools });
        } else {
          session = await this.#client.attachSession(this.state.sessionId, { afterSeq: this.state.lastSeq, tools });
        }
      } catch (err) {
        if (await this.#failed(err)) continue;
        return;
      }
      if (this.#closed) return session.detach();
      this.#session = session;
      session.onStatus((status, error) => this.#linkStatus(status, error));
      this.#linkStatus(session.status);
      if ("start" in this.#target && this.#target.firstMessage !== undefined) void this.sendMessage(this.#target.firstMessage);
      try {
        for await (const ev of session.events) this.#update(applyEvent(this.state, ev));
        if (session.status === "ended") return this.#finish("ended", "the session has ended");
        return;
      } catch (err) {
        if (!(await this.#failed(err))) return;
      }
    }
  }

  /** A failed attach or link: true when it should attach again (after the expired events were replaced by the transcript). */
  async #failed(err: unknown): Promise<boolean> {
    if (this.#closed) return false;
    const e = err instanceof RozError ? err : new RozError("unknown", String(err));
    if (e.status === UNIMPLEMENTED) {
      this.#finish("unsupported", "this server does not offer AttachSession yet: the transcript comes from REST only");
      return false;
    }
    const onExpired = "sessionId" in this.#target ? this.#target.onExpired : undefined;
    const resumeFrom = e.code === "events_expired" ? await onExpired?.().catch(() => undefined) : undefined;
    if (resumeFrom && resumeFrom.lastSeq > this.state.lastSeq) {
      // Go on live from the session's last seq, with what came before from the stored transcript.
      this.#update({
        ...this.state,
        items: [...resumeFrom.items, { kind: "notice", tone: "info", text: "older events have expired: earlier turns come from the stored transcript" }],
        lastSeq: resumeFrom.lastSeq,
      });
      return true;
    }
    this.#finish("failed", e.message);
    return false;
  }

  #linkStatus(status: SessionStatus, error?: RozError): void {
    if (status === "ended" || status === "failed" || status === "detached") return; // the event loop's end says so
    this.status = status;
    this.detail = error?.message ?? "";
    this.#emit();
  }

  #finish(status: LinkStatus, detail: string): void {
    this.status = status;
    this.detail = detail;
    if (status === "ended") this.state = { ...this.state, ended: true, turnRunning: false };
    this.#saveNow();
    this.#emit();
  }

  /** The session, once attached; requests before that are refused. */
  #attached(): Session {
    if (!this.#session) throw new RozError("unavailable", "not attached yet", { retryable: true });
    return this.#session;
  }

  /** Runs `action`; a refused call is shown as a notice, then rethrown. */
  async #act(what: string, action: (s: Session) => Promise<unknown>): Promise<void> {
    try {
      await action(this.#attached());
    } catch (err) {
      const e = err instanceof RozError ? err : new RozError("unknown", String(err));
      // In-band refusals arrive as error events, which the timeline shows already.
      if (e.status !== 0 || e.requestId === "") this.#notice(`${what} failed (${e.code}): ${e.message}`);
      throw e;
    }
  }

  /** Sends a message; `delivery` says what happens to it while a turn runs (queue, steer, interrupt). */
  async sendMessage(text: string, delivery?: Delivery): Promise<void> {
    const session = this.#attached();
    const turn = session.send(text, delivery ? { delivery } : {});
    this.#update(addUserMessage(this.state, turn.messageId, text, delivery));
    await turn.done.catch((err: unknown) => {
      const e = err as RozError;
      if (e.code !== "dropped" && e.status !== 0) this.#notice(`not delivered (${e.code}): ${e.message}`);
    });
  }

  cancelTurn = () => this.#act("cancel", (s) => s.cancelTurn({ reason: "cancelled in the console" }));
  /** Hides the last `turns` completed turns from the agent (the transcript keeps them, marked). */
  rollback = (turns = 1) => this.#act("rollback", (s) => s.rollback(turns).catch(() => undefined));
  endSession = () => this.#act("end", (s) => s.close("ended in the console"));
  decide = (toolCallId: string, approved: boolean) => this.#act("decision", (s) => s.decide(toolCallId, approved));

  /** The user's answer to an `ask_user` question. */
  answer(toolCallId: string, text: string): void {
    this.#answers.get(toolCallId)?.(text);
  }

  #ask(question: string, toolCallId: string): Promise<string> {
    return new Promise((resolve) => {
      this.questions = [...this.questions, { toolCallId, question }];
      this.#answers.set(toolCallId, (answer) => {
        this.#answers.delete(toolCallId);
        this.questions = this.questions.filter((q) => q.toolCallId !== toolCallId);
        resolve(answer);
        this.#emit();
      });
      this.#emit();
    });
  }

  close(): void {
    this.#closed = true;
    this.#saveNow();
    removeEventListener("pagehide", this.#saveNow);
    this.#session?.detach();
    this.#listeners.clear();
  }
}
