import type { Interface } from "node:readline";
import { clearScreenDown, cursorTo, moveCursor } from "node:readline";
import { stripVTControlCharacters } from "node:util";

/** Where the chat writes: the conversation as it streams, and notes about the connection. */
export interface Screen {
  /** Conversation output; it may end mid-line (a streaming answer). */
  write(text: string): void;
  /** A line about the chat itself (connected, reconnecting, detached). */
  note(line: string): void;
  /** True when the output is at the start of a line. */
  readonly atLineStart: boolean;
  /** The line the user is asked for next (`› `, or an approval question). Plain text has none. */
  setPrompt(prompt: string): void;
  /** Writes what is left and lets go of the terminal. */
  close(): void;
}

/** Starts a new line unless the output is at the start of one. */
export function newline(screen: Screen): void {
  if (!screen.atLineStart) screen.write("\n");
}

/** Writes `text` as a whole line of the conversation. */
export function writeLine(screen: Screen, text: string): void {
  newline(screen);
  screen.write(`${text}\n`);
}

/** Plain text (no terminal): the conversation on stdout, notes on stderr, no prompt. */
export class PlainScreen implements Screen {
  readonly #out: NodeJS.WritableStream;
  readonly #err: NodeJS.WritableStream;
  #atLineStart = true;

  constructor(out: NodeJS.WritableStream, err: NodeJS.WritableStream) {
    this.#out = out;
    this.#err = err;
  }

  get atLineStart(): boolean {
    return this.#atLineStart;
  }
  write(text: string): void {
    if (text === "") return;
    this.#out.write(text);
    this.#atLineStart = text.endsWith("\n");
  }
  note(line: string): void {
    this.#err.write(`${line}\n`);
  }
  setPrompt(): void {}
  close(): void {
    newline(this);
  }
}

const widthOf = (text: string): number => stripVTControlCharacters(text).length;

/**
 * A terminal where the user types while the answer streams: the last, unfinished line of
 * output and the prompt (with what is typed so far) stay at the bottom. Each write erases
 * both, writes the new output, and draws them again below it; readline keeps the typed text.
 */
export class TtyScreen implements Screen {
  /** The output's unfinished last line, shown above the prompt. */
  #partial = "";
  #prompting = false;
  readonly #out: NodeJS.WriteStream;
  readonly #rl: Interface;

  constructor(out: NodeJS.WriteStream, rl: Interface) {
    this.#out = out;
    this.#rl = rl;
  }

  get atLineStart(): boolean {
    return this.#partial === "";
  }

  write(text: string): void {
    if (text === "") return;
    this.#clear();
    const all = this.#partial + text;
    this.#partial = all.slice(all.lastIndexOf("\n") + 1);
    this.#out.write(all);
    this.#redraw();
  }

  note(line: string): void {
    newline(this);
    this.write(`${line}\n`);
  }

  /** Shows `prompt` from now on (the first call starts prompting). */
  setPrompt(prompt: string): void {
    if (this.#prompting && prompt === this.#rl.getPrompt()) return;
    this.#clear();
    this.#rl.setPrompt(prompt);
    this.#prompting = true;
    this.#out.write(this.#partial);
    this.#redraw();
  }

  /**
   * A line was entered: readline has moved below it. Its echo is erased (the conversation
   * shows the message when the server takes it) and the prompt is drawn again.
   */
  submitted(line: string): void {
    const rows = this.#rows(this.#rl.getPrompt() + line);
    moveCursor(this.#out, 0, -rows);
    cursorTo(this.#out, 0);
    clearScreenDown(this.#out);
    this.#rl.prompt(true);
  }

  close(): void {
    this.#clear();
    this.#prompting = false;
    this.#out.write(this.#partial === "" ? "" : `${this.#partial}\n`);
    this.#partial = "";
  }

  #rows(text: string): number {
    return Math.max(1, Math.ceil(widthOf(text) / Math.max(1, this.#out.columns || 80)));
  }

  /** Moves to where the unfinished line starts (or the prompt, without one) and erases down. */
  #clear(): void {
    if (!this.#prompting) {
      if (this.#partial === "") return;
      moveCursor(this.#out, 0, -(this.#rows(this.#partial) - 1));
    } else {
      moveCursor(this.#out, 0, -(this.#rl.getCursorPos().rows + (this.#partial === "" ? 0 : this.#rows(this.#partial))));
    }
    cursorTo(this.#out, 0);
    clearScreenDown(this.#out);
  }

  /** Draws the prompt below the unfinished line; readline puts the typed text and the cursor back. */
  #redraw(): void {
    if (!this.#prompting) return;
    if (this.#partial !== "") this.#out.write("\n");
    // readline first moves up as many rows as the cursor sat below the prompt's start.
    this.#out.write("\n".repeat(this.#rl.getCursorPos().rows));
    this.#rl.prompt(true);
  }
}
