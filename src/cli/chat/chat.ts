import type { Delivery, OnApproval, RozClient, RozError, Session, Tools, Turn } from "@roz/client";
import type { ChatOptions } from "./args.ts";
import type { Asker } from "./asker.ts";
import { brief, Renderer } from "./render.ts";
import type { Screen } from "./screen.ts";
import type { Style } from "./style.ts";

export interface ChatInit {
  roz: RozClient;
  screen: Screen;
  style: Style;
  asker: Asker;
  tools: Tools | undefined;
  /** Whether this chat's own messages are written again when their turn starts (a terminal erased their echo). */
  echoOwn: boolean;
  /** The session ended or failed without this chat asking for it. */
  gone: (code: number) => void;
}

/** After this long without a session, the chat says it is still connecting. */
const SLOW_CONNECT_MS = 3000;

/** A worker's calls (`worker/call` ids) outlive the turn. */
const ofTurn = (toolCallId: string): boolean => !toolCallId.includes("/");

/**
 * The session the chat talks to (a fork replaces it), and what the commands do to it. Every
 * event is written by one Renderer per session, from `session.events`, whoever caused it.
 */
export class Chat {
  readonly #init: ChatInit;
  readonly #own = new Map<string, string>();
  readonly #onApproval: OnApproval;
  #session!: Session;
  #renderer!: Renderer;
  /** Set when this chat detaches or ends the session: its end is then no surprise. */
  #leaving = false;

  constructor(init: ChatInit) {
    this.#init = init;
    this.#onApproval = async (a) => {
      const why = a.reason ? ` (${a.reason})` : "";
      return init.asker.ask(`approve ${a.toolName} ${brief(JSON.stringify(a.parameters), 160)}${why}?`, a.toolCallId);
    };
  }

  get session(): Session {
    return this.#session;
  }
  get renderer(): Renderer {
    return this.#renderer;
  }

  /** Starts a session, or re-attaches to `--session ID` (the events so far are written first). */
  async open(options: ChatOptions): Promise<void> {
    const { roz, tools } = this.#init;
    const common = { ...(tools ? { tools } : {}), onApproval: this.#onApproval };
    // An attach keeps trying an unreachable server (reconnectTimeoutMs): say what it waits for.
    const slow = setTimeout(() => this.#init.screen.note(`(still connecting to ${options.url}…)`), SLOW_CONNECT_MS);
    const session = await (options.sessionId
      ? roz.attachSession(options.sessionId, { afterSeq: 0, ...common })
      : roz.startSession({ ...(options.model ? { model: options.model } : {}), title: "roz chat", ...common })
    ).finally(() => clearTimeout(slow));
    this.#use(session);
    if (session.status === "ended") {
      // Attached after its end: the server replayed it and closed the stream.
      await this.#renderer.written(session.lastSeq);
      throw new Error(`session ${session.id} has ended: its conversation is above; it cannot go on (start a new one)`);
    }
    if (options.sessionId && session.lastSeq > 0) this.#renderer.markAfter(session.lastSeq, this.#init.style.dim("── re-attached: live from here ──"));
  }

  /** Sends a message; `queue` (the default) waits for the running turn to end. */
  send(text: string, delivery: Delivery = "queue"): Turn {
    const turn = this.#session.send(text, { delivery });
    this.#own.set(turn.messageId, text);
    return turn;
  }

  /** Waits for `turn` and for its events to be written; false when it ended in an error or was refused. */
  async finish(turn: Turn): Promise<boolean> {
    let ok = true;
    try {
      const result = await turn.done;
      ok = result.stopReason !== "error" && result.stopReason !== "budget_exceeded";
    } catch (err) {
      ok = false;
      const e = err as RozError;
      // In-band refusals and drops are written with the session's events.
      if (e.requestId === "" && e.code !== "dropped") this.#init.screen.note(this.#init.style.red(`error ${e.code}: ${e.message}`));
    }
    await this.#renderer.written(this.#session.lastSeq);
    return ok;
  }

  /** Goes on in a copy of the session; the original is left running on the server. */
  async fork(): Promise<void> {
    const { tools, screen } = this.#init;
    const source = this.#session;
    // The fork keeps the source's tool schemas on the server; this chat's runners answer its calls.
    const forked = await source.fork({ onApproval: this.#onApproval, ...(tools ? { tools } : {}) });
    this.#leaving = true;
    source.detach();
    this.#leaving = false;
    this.#use(forked);
    screen.note(`forked: now in session ${forked.id}; ${source.id} keeps running (roz chat --session ${source.id})`);
  }

  /** One line: the session's id, the seq of its last event here, the link's status and whether a turn runs. */
  describe(): string {
    const s = this.#session;
    const model = s.model ? ` · model ${s.model}` : "";
    return `session ${s.id} · seq ${s.lastSeq} · ${s.status} · ${this.#renderer.running ? "turn running" : "idle"}${model}`;
  }

  /** Leaves the session running on the server and says how to come back. */
  detach(): void {
    this.#leaving = true;
    const id = this.#session.id;
    this.#session.detach();
    this.#init.screen.note(`detached: session ${id} keeps running on the server; re-attach with: roz chat --session ${id}`);
  }

  /** Ends the session (its running turn is cancelled). */
  async end(): Promise<void> {
    this.#leaving = true;
    await this.#session.close("the user left roz chat");
  }

  #use(session: Session): void {
    const { screen, style, asker } = this.#init;
    this.#session = session;
    const renderer = new Renderer({
      screen,
      style,
      own: this.#own,
      echoOwn: this.#init.echoOwn,
      changed: () => this.#promptChanged(),
      closed: (id) => asker.forget((q) => (id === undefined ? ofTurn(q) : q === id)),
    });
    this.#renderer = renderer;
    void (async () => {
      for await (const ev of session.events) renderer.render(ev);
    })().catch(() => undefined);
    let reconnecting = false;
    // An end before the chat is open is `open`'s to report.
    const opened = session.status !== "ended";
    session.onStatus((status, error) => {
      if (this.#session !== session) return;
      if (status === "reconnecting" && !reconnecting) screen.note(style.yellow(`(connection lost: ${error?.message ?? "the stream broke"}; reconnecting…)`));
      if (status === "live" && reconnecting) screen.note(style.dim("(reconnected)"));
      reconnecting = status === "reconnecting";
      if (this.#leaving || (status !== "ended" && status !== "failed") || !opened) return;
      screen.note(status === "ended" ? "the session ended" : style.red(`the session is lost: ${error?.code ?? "unknown"}: ${error?.message ?? ""}`));
      this.#init.gone(status === "ended" ? 0 : 1);
    });
    this.#promptChanged();
  }

  /** The prompt: the open question, else whether input now waits in the queue. */
  #promptChanged(): void {
    this.#init.screen.setPrompt(this.#init.asker.current ?? (this.#renderer?.running ? "(queue) › " : "› "));
  }

  /** Shows the current prompt again (the asker's question changed). */
  refreshPrompt(): void {
    this.#promptChanged();
  }
}
