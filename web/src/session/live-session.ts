import { Code, ConnectError } from "@connectrpc/connect";
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { SessionRequestSchema, StartSessionSchema } from "../../../src/gen/roz/v1/agent_pb.js";
import type { AgentClient } from "../api/rpc.ts";
import { isBrowserTool, runBrowserTool } from "./browser-tools.ts";
import { loadState, saveState } from "./saved-state.ts";
import { InputDelivery } from "../../../src/gen/roz/v1/agent_pb.js";
import { addUserMessage, applyResponse, type Delivery, emptyState, markToolAnswered, openToolCalls, type SessionState } from "./timeline.ts";

export type StartInit = MessageInitShape<typeof StartSessionSchema>;
type RequestInit = MessageInitShape<typeof SessionRequestSchema>["request"];

/** Where the attached stream is. `unsupported`: the server has no AttachSession (UNIMPLEMENTED). */
export type LinkStatus = "connecting" | "live" | "reconnecting" | "ended" | "unsupported" | "failed";

export interface Question {
  toolCallId: string;
  question: string;
}

const DELIVERIES: Record<Delivery, InputDelivery> = {
  queue: InputDelivery.QUEUE,
  steer: InputDelivery.STEER,
  interrupt: InputDelivery.INTERRUPT,
};

/** How long an open tool call must stay open before this console runs it: a replay brings its answer right behind it. */
const SETTLE_MS = 150;
const MAX_BACKOFF_MS = 15_000;

/**
 * One session as this tab sees it: an AttachSession stream (a new session from `start`, or an
 * existing one from the last seq this tab saw) plus SendToSession calls for everything the
 * user does. The view state is saved per session in sessionStorage with its seq, so a reload
 * re-attaches after exactly what it already drew. A broken stream re-attaches with backoff.
 */
export class LiveSession {
  state: SessionState;
  status: LinkStatus = "connecting";
  detail = "";
  questions: Question[] = [];
  readonly #client: AgentClient;
  readonly #abort = new AbortController();
  readonly #listeners = new Set<() => void>();
  readonly #handled = new Set<string>();
  readonly #answers = new Map<string, (answer: string) => void>();
  #start: StartInit | undefined;
  #saveTimer: ReturnType<typeof setTimeout> | undefined;

  /**
   * `onExpired`: when the server no longer keeps the events after this tab's seq (OUT_OF_RANGE,
   * `events_expired`), where to go on from: the stored transcript and the session's last seq.
   */
  readonly #onExpired: (() => Promise<{ items: SessionState["items"]; lastSeq: number } | undefined>) | undefined;

  constructor(
    client: AgentClient,
    target:
      | { sessionId: string; onExpired?: () => Promise<{ items: SessionState["items"]; lastSeq: number } | undefined> }
      | { start: StartInit; firstMessage?: string },
  ) {
    this.#client = client;
    this.#onExpired = "sessionId" in target ? target.onExpired : undefined;
    if ("start" in target) {
      this.#start = target.start;
      this.state = { ...emptyState(), answersTools: (target.start.tools?.length ?? 0) > 0 };
      this.#pendingFirst = target.firstMessage;
    } else {
      this.state = loadState(target.sessionId) ?? emptyState(target.sessionId);
    }
    addEventListener("pagehide", this.#saveNow);
  }

  #pendingFirst: string | undefined;

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

  /** Attaches and keeps attached until the session ends or `close()`. */
  async run(): Promise<void> {
    let backoff = 500;
    while (!this.#abort.signal.aborted) {
      this.status = this.state.lastSeq > 0 ? "reconnecting" : "connecting";
      this.#emit();
      try {
        const request = this.#start
          ? { target: { case: "start" as const, value: this.#start } }
          : { target: { case: "sessionId" as const, value: this.state.sessionId }, afterSeq: BigInt(this.state.lastSeq) };
        if (!this.#start) this.#probe();
        for await (const res of this.#client.attachSession(request, { signal: this.#abort.signal })) {
          if (this.status !== "live") {
            this.status = "live";
            backoff = 500;
          }
          this.#update(applyResponse(this.state, res));
          if (res.response.case === "sessionStarted" && this.#start) {
            this.#start = undefined;
            if (this.#pendingFirst !== undefined) void this.sendMessage(this.#pendingFirst);
            this.#pendingFirst = undefined;
          }
          this.#scheduleTools();
        }
        this.#finish("ended", "the session has ended");
        return;
      } catch (err) {
        if (this.#abort.signal.aborted) return;
        const e = ConnectError.from(err);
        if (e.code === Code.Unimplemented)
          return this.#finish("unsupported", "this server does not offer AttachSession yet: the transcript comes from REST only");
        const resumeFrom = e.code === Code.OutOfRange ? await this.#onExpired?.().catch(() => undefined) : undefined;
        if (resumeFrom && resumeFrom.lastSeq > this.state.lastSeq) {
          // Go on live from the session's last seq, with what came before from the stored transcript.
          this.#update({
            ...this.state,
            items: [...resumeFrom.items, { kind: "notice", tone: "info", text: "older events have expired: earlier turns come from the stored transcript" }],
            lastSeq: resumeFrom.lastSeq,
          });
          continue;
        }
        if (
          [Code.NotFound, Code.InvalidArgument, Code.OutOfRange, Code.Unauthenticated, Code.PermissionDenied, Code.FailedPrecondition].includes(e.code) ||
          this.#start
        ) {
          return this.#finish("failed", e.rawMessage);
        }
        this.detail = e.rawMessage;
        this.status = "reconnecting";
        this.#emit();
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  /**
   * A session with nothing to replay (a fork, an idle one this tab saw to the end) sends nothing
   * on attach: a ping's pong then shows the link is up, instead of "connecting" until a keepalive.
   */
  #probe(): void {
    for (const delayMs of [200, 1000]) {
      setTimeout(() => {
        if (this.status !== "live" && !this.#abort.signal.aborted) void this.send({ case: "ping", value: {} }).catch(() => undefined);
      }, delayMs);
    }
  }

  #finish(status: LinkStatus, detail: string): void {
    this.status = status;
    this.detail = detail;
    if (status === "ended") this.state = { ...this.state, ended: true, turnRunning: false };
    this.#saveNow();
    this.#emit();
  }

  /** Delivers one request to the session; in-band errors come back on the stream. */
  async send(request: RequestInit): Promise<void> {
    try {
      await this.#client.sendToSession({ sessionId: this.state.sessionId, request: { request } });
    } catch (err) {
      const e = ConnectError.from(err);
      this.#update({
        ...this.state,
        items: [...this.state.items, { kind: "notice", tone: "error", text: `not delivered (${Code[e.code]}): ${e.rawMessage}` }],
      });
      throw e;
    }
  }

  /** Sends a message; `delivery` says what happens to it while a turn runs (queue, steer, interrupt). */
  async sendMessage(text: string, delivery?: Delivery): Promise<void> {
    const messageId = crypto.randomUUID();
    this.#update(addUserMessage(this.state, messageId, text, delivery));
    await this.send({ case: "userMessage", value: { content: text, messageId, ...(delivery ? { delivery: DELIVERIES[delivery] } : {}) } });
  }

  cancelTurn = () => this.send({ case: "cancelTurn", value: { reason: "cancelled in the console" } });
  /** Hides the last `turns` completed turns from the agent (the transcript keeps them, marked). */
  rollback = (turns = 1) => this.send({ case: "rollback", value: { turns } });
  endSession = () => this.send({ case: "cancelSession", value: { reason: "ended in the console" } });
  decide = (toolCallId: string, approved: boolean) => this.send({ case: "permissionDecision", value: { toolCallId, approved } });

  /** The user's answer to an `ask_user` question. */
  answer(toolCallId: string, text: string): void {
    this.#answers.get(toolCallId)?.(text);
  }

  /** Runs the browser tools the agent is waiting for, once they stayed open for SETTLE_MS. */
  #scheduleTools(): void {
    if (!this.state.answersTools) return;
    for (const call of openToolCalls(this.state)) {
      if (this.#handled.has(call.id) || !isBrowserTool(call.name)) continue;
      this.#handled.add(call.id);
      setTimeout(() => {
        if (!openToolCalls(this.state).some((c) => c.id === call.id)) return;
        void this.#runTool(call.id, call.name, call.parameters);
      }, SETTLE_MS);
    }
  }

  async #runTool(id: string, name: string, args: JsonObject): Promise<void> {
    const started = performance.now();
    const outcome = await runBrowserTool(name, args, { ask: (question, toolCallId) => this.#ask(question, toolCallId) }, id);
    if (this.#abort.signal.aborted) return;
    this.#update(markToolAnswered(this.state, id, outcome.success, outcome.result));
    await this.send({
      case: "toolResult",
      value: { toolCallId: id, success: outcome.success, result: outcome.result, durationMs: BigInt(Math.round(performance.now() - started)) },
    }).catch(() => undefined);
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
    this.#saveNow();
    removeEventListener("pagehide", this.#saveNow);
    this.#abort.abort();
    this.#listeners.clear();
  }
}
