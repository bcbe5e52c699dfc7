import { type EventOf, InputState, type SessionEvent } from "@roz/client";
import { newline, type Screen, writeLine } from "./screen.ts";
import type { Style } from "./style.ts";

/** At most `max` characters of the first line of `text`, marked when cut. */
export function brief(text: string, max = 100): string {
  const lines = text.trimEnd().split("\n");
  const first = lines[0] ?? "";
  const more = lines.length > 1 ? ` (${lines.length} lines)` : "";
  return first.length > max || more ? `${first.slice(0, max)} …${more}` : first;
}

const tokens = (n: number): string => `${n} token${n === 1 ? "" : "s"}`;

/** The line after each turn: how it stopped, its tokens and its cost. */
export function usageLine(ev: EventOf<"turn_complete">): string {
  const u = ev.usage;
  const cached = u && u.cacheReadTokens > 0 ? `, ${u.cacheReadTokens} cached` : "";
  return `[${ev.stopReason} · ${tokens(u?.inputTokens ?? 0)} in${cached}, ${tokens(u?.outputTokens ?? 0)} out · $${ev.costUsd.toFixed(4)}]`;
}

export interface RendererInit {
  screen: Screen;
  style: Style;
  /** Messages this chat sent (id → text): their text is known before the server echoes it. */
  own: Map<string, string>;
  /** Whether a message this chat sent is shown again when its turn starts (the terminal erased its echo). */
  echoOwn: boolean;
  /** A turn started or ended (the prompt says whether input waits in the queue). */
  changed: () => void;
  /** A tool call or approval is over: questions about it are withdrawn (`undefined`: every call of the turn). */
  closed: (toolCallId: string | undefined) => void;
}

/**
 * Writes a session's events as the conversation: the answer as it streams, thinking dimmed,
 * tool calls with a brief result, refusals and errors, and usage and cost after each turn.
 */
export class Renderer {
  readonly #init: RendererInit;
  #segment: "text" | "thinking" | undefined;
  #seq = 0;
  #running: string | undefined;
  readonly #queued = new Set<string>();
  readonly #asides: string[] = [];
  readonly #waiters: { seq: number; resolve: () => void }[] = [];
  readonly #marks = new Map<number, string>();

  constructor(init: RendererInit) {
    this.#init = init;
  }

  /** The running turn's message id, if one runs. */
  get running(): string | undefined {
    return this.#running;
  }

  /** Writes `line` right after the event `seq` (e.g. where a replay ends). */
  markAfter(seq: number, line: string): void {
    if (seq <= this.#seq) this.#line(line);
    else this.#marks.set(seq, line);
  }

  /** Resolves once every event through `seq` has been written. */
  written(seq: number): Promise<void> {
    if (seq <= this.#seq) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ seq, resolve }));
  }

  render(ev: SessionEvent): void {
    this.#event(ev);
    this.#seq = ev.seq;
    const mark = this.#marks.get(ev.seq);
    if (mark !== undefined) {
      this.#marks.delete(ev.seq);
      this.#line(mark);
    }
    for (const w of this.#waiters.filter((x) => x.seq <= ev.seq)) {
      this.#waiters.splice(this.#waiters.indexOf(w), 1);
      w.resolve();
    }
  }

  #event(ev: SessionEvent): void {
    const { style } = this.#init;
    switch (ev.type) {
      case "text_delta":
        return this.#stream("text", ev.content);
      case "thinking_delta":
        return this.#stream("thinking", ev.content);
      case "input_update":
        return this.#input(ev);
      case "tool_request":
        // An approval given elsewhere (another client) is over here too.
        this.#init.closed(ev.toolCallId);
        return this.#line(style.cyan(`→ ${ev.toolName} ${brief(JSON.stringify(ev.parameters ?? {}), 160)}`));
      case "tool_finished":
        this.#init.closed(ev.toolCallId);
        return this.#line(ev.success ? style.dim(`  ← ${brief(ev.result) || "(empty)"}`) : style.red(`  ← failed: ${brief(ev.result)}`));
      case "tool_denied":
        this.#init.closed(ev.toolCallId);
        return this.#line(style.red(`  ✗ ${ev.toolName} not run (${ev.reason})${ev.detail ? `: ${brief(ev.detail)}` : ""}`));
      case "turn_complete":
        this.#running = undefined;
        this.#init.closed(undefined);
        this.#line(style.dim(usageLine(ev)));
        return this.#init.changed();
      case "error":
        return this.#line(style.red(`error ${ev.code}: ${ev.message}`));
      case "context_compacted":
        return this.#line(style.dim(`(context compacted: ${ev.level}, ${ev.tokensBefore} → ${ev.tokensAfter} tokens)`));
      case "rolled_back":
        return this.#line(style.dim(`(rolled back ${ev.turns} turn${ev.turns === 1 ? "" : "s"}; the model now sees ${ev.remainingTurns})`));
      case "team_started":
        return this.#line(style.dim(`(the agent started a team: task ${ev.taskId})`));
      case "mcp_server_degraded":
        return this.#line(style.yellow(`(MCP server ${ev.serverName} keeps failing: ${ev.lastError})`));
      default:
        return undefined;
    }
  }

  #input(ev: EventOf<"input_update">): void {
    const { style, own } = this.#init;
    const text = ev.content || own.get(ev.messageId) || "";
    switch (ev.state) {
      case InputState.QUEUED:
        if (this.#queued.has(ev.messageId)) return;
        this.#queued.add(ev.messageId);
        return this.#aside(style.dim(`… queued (#${ev.queuePosition})${text ? `: ${text}` : ""}`));
      case InputState.STEERED:
        return this.#aside(style.dim(`↪ steered into the running turn: ${text}`));
      case InputState.DROPPED:
        return this.#aside(style.dim(`✗ dropped: ${text}`));
      case InputState.STARTED:
        this.#queued.delete(ev.messageId);
        this.#running = ev.messageId;
        if (this.#init.echoOwn || !own.has(ev.messageId)) this.#line(style.cyan(`› ${text}`));
        return this.#init.changed();
      default:
        return undefined;
    }
  }

  #stream(kind: "text" | "thinking", content: string): void {
    const { screen, style } = this.#init;
    if (this.#segment !== kind) {
      newline(screen);
      if (kind === "thinking" && style.plain) screen.write("thinking: ");
    }
    this.#segment = kind;
    screen.write(kind === "thinking" ? style.dim(content) : content);
  }

  /** A line beside the answer: it waits while the answer is mid-line, so as not to cut it. */
  #aside(text: string): void {
    if (this.#init.screen.atLineStart) this.#line(text);
    else this.#asides.push(text);
  }

  #line(text: string): void {
    this.#segment = undefined;
    for (const aside of this.#asides.splice(0)) writeLine(this.#init.screen, aside);
    writeLine(this.#init.screen, text);
  }
}
