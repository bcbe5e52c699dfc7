import type { ApprovePolicy } from "./args.ts";
import { type Screen, writeLine } from "./screen.ts";
import type { Style } from "./style.ts";

interface Question {
  id: string;
  text: string;
  resolve: (yes: boolean) => void;
}

/**
 * Yes/no questions to the user (approvals, paths outside the working folder), one at a time
 * at the prompt: the next line typed answers the first open one. With the policy `all` or
 * `none` (`none` without a terminal) nobody is asked and the answer is written next to the question.
 */
export class Asker {
  readonly #screen: Screen;
  readonly #style: Style;
  readonly #policy: ApprovePolicy;
  readonly #changed: () => void;
  readonly #open: Question[] = [];
  #nextId = 0;

  /** `changed` is called when the question to show at the prompt changes. */
  constructor(init: { screen: Screen; style: Style; policy: ApprovePolicy; changed: () => void }) {
    this.#screen = init.screen;
    this.#style = init.style;
    this.#policy = init.policy;
    this.#changed = init.changed;
  }

  /** The question the prompt shows, if one is open. */
  get current(): string | undefined {
    const q = this.#open[0];
    return q && `${q.text} [y/n] `;
  }

  /** Asks `text`; `id` (a tool call id) lets `forget` withdraw it when the call is over. */
  ask(text: string, id = `q${++this.#nextId}`): Promise<boolean> {
    if (this.#policy !== "ask") {
      const yes = this.#policy === "all";
      this.#line(text, yes ? "yes (--approve all)" : "no (no one to ask; --approve all approves)");
      return Promise.resolve(yes);
    }
    return new Promise((resolve) => {
      this.#open.push({ id, text, resolve });
      if (this.#open.length === 1) this.#changed();
    });
  }

  /** Answers the open question with a typed line; false when none is open. Anything but y/n asks again. */
  answer(line: string): boolean {
    const q = this.#open[0];
    if (!q) return false;
    const word = line.trim().toLowerCase();
    if (word !== "y" && word !== "yes" && word !== "n" && word !== "no") {
      this.#screen.note(this.#style.yellow("answer y or n"));
      return true;
    }
    const yes = word.startsWith("y");
    this.#line(q.text, yes ? "yes" : "no");
    this.#settle(q, yes);
    return true;
  }

  /** Withdraws the questions whose ids `match` (their call is over): each counts as "no". */
  forget(match: (id: string) => boolean): void {
    for (const q of this.#open.filter((o) => match(o.id))) {
      this.#line(q.text, "no longer asked");
      this.#settle(q, false);
    }
  }

  #settle(q: Question, yes: boolean): void {
    const first = this.#open[0] === q;
    this.#open.splice(this.#open.indexOf(q), 1);
    q.resolve(yes);
    if (first) this.#changed();
  }

  #line(text: string, answer: string): void {
    writeLine(this.#screen, `${this.#style.yellow(`? ${text}`)} ${this.#style.dim(`→ ${answer}`)}`);
  }
}
