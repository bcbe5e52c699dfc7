import type { Interface } from "node:readline";
import type { Asker } from "./asker.ts";
import type { Chat } from "./chat.ts";
import { type LineOutcome, runLine } from "./commands.ts";
import { type Screen, type TtyScreen, writeLine } from "./screen.ts";
import type { Style } from "./style.ts";

/** Two Ctrl-C within this long: detach and exit. */
export const DOUBLE_PRESS_MS = 1500;

export interface LoopInit {
  chat: Chat;
  screen: Screen;
  style: Style;
  /** Resolves with the exit code when the session ends or fails on its own. */
  gone: Promise<number>;
  /** Registers the Ctrl-C handler (a terminal's readline, or SIGINT); returns its removal. */
  onCtrlC: (handler: () => void) => () => void;
}

/** How the chat is left: `exit` ends the session, `detach` leaves it running, `gone` found it over. */
type Leave = { how: "exit" | "detach" } | { how: "gone"; code: number };

/**
 * Ctrl-C: the first press cancels the running turn (or says what a second one does); a second
 * within DOUBLE_PRESS_MS leaves the chat with the session still running.
 */
function ctrlC({ chat, screen, style }: LoopInit, leave: () => void): () => void {
  let last = Number.NEGATIVE_INFINITY;
  return () => {
    const now = Date.now();
    if (now - last < DOUBLE_PRESS_MS) return leave();
    last = now;
    if (chat.renderer.running) {
      screen.note(style.dim("(cancelling the turn; Ctrl-C again to detach and exit)"));
      void chat.session.cancelTurn({ reason: "Ctrl-C in roz chat" }).catch(() => undefined);
    } else {
      screen.note(style.dim("(Ctrl-C again to detach and exit; /exit ends the session)"));
    }
  };
}

/** Does what `leave` says and gives the exit code. */
async function finish(chat: Chat, leave: Leave, failed: boolean): Promise<number> {
  if (leave.how === "gone") return leave.code;
  if (leave.how === "detach") chat.detach();
  else await chat.end();
  return failed ? 1 : 0;
}

const leaving = (o: LineOutcome): Leave | undefined => (o.kind === "exit" || o.kind === "detach" ? { how: o.kind } : undefined);

/**
 * At a terminal: each line is handled as it is typed (a message while a turn runs waits in the
 * queue), a line answers the open approval question, and the session's events stream above
 * the prompt. Ends with /exit, Ctrl-D, /detach, Ctrl-C twice, or the session's own end.
 */
export function ttyLoop(init: LoopInit, rl: Interface, screen: TtyScreen, asker: Asker): Promise<number> {
  const { chat } = init;
  return new Promise<Leave>((resolve) => {
    rl.on("line", (line) => {
      screen.submitted(line);
      const command = /^\/(?!\/)/.test(line.trim());
      // A message shows when its turn starts; a command stays visible, as typed.
      if (command) writeLine(screen, init.style.dim(`› ${line.trim()}`));
      else if (asker.answer(line)) return;
      void runLine(line, chat, init).then((o) => {
        if (o.kind === "sent") void chat.finish(o.turn);
        const leave = leaving(o);
        if (leave) resolve(leave);
      });
    });
    rl.on("close", () => resolve({ how: "exit" }));
    const off = init.onCtrlC(ctrlC(init, () => resolve({ how: "detach" })));
    void init.gone.then((code) => resolve({ how: "gone", code }));
    void init.gone.finally(off);
  }).then((leave) => finish(chat, leave, false));
}

/**
 * Without a terminal: each line of `lines` is sent when the turn before it has ended, and at
 * the end of input the session ends once the last turn did. Exits 1 when a turn failed.
 */
export async function plainLoop(init: LoopInit, lines: AsyncIterable<string> & { close(): void }): Promise<number> {
  const { chat } = init;
  let leave: Leave | undefined;
  let left!: () => void;
  const stopped = new Promise<void>((resolve) => (left = resolve));
  const stop = (l: Leave): void => {
    leave ??= l;
    lines.close();
    left();
  };
  const off = init.onCtrlC(ctrlC(init, () => stop({ how: "detach" })));
  void init.gone.then((code) => stop({ how: "gone", code }));
  let failed = false;
  try {
    for await (const line of lines) {
      if (leave) break;
      const o = await runLine(line, chat, init);
      // Ctrl-C twice leaves at once, whether or not the turn ends.
      if (o.kind === "sent" && !(await Promise.race([chat.finish(o.turn), stopped.then(() => true)]))) failed = true;
      const l = leaving(o);
      if (l) stop(l);
    }
  } finally {
    off();
  }
  return finish(chat, leave ?? { how: "exit" }, failed);
}
