import { createInterface } from "node:readline";
import { RozClient, RozError } from "@roz/client";
import type { CliOutput } from "../keys.ts";
import { CHAT_USAGE, type ChatOptions, parseChatArgs } from "./args.ts";
import { Asker } from "./asker.ts";
import { Chat } from "./chat.ts";
import { fsTools } from "./fs-tools.ts";
import { plainLoop, ttyLoop } from "./loops.ts";
import { PlainScreen, type Screen, TtyScreen } from "./screen.ts";
import { ansiStyle, plainStyle } from "./style.ts";

export { CHAT_USAGE };

/** What the chat runs in: the process's streams, environment and folder, or a test's. */
export interface ChatTerminal {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WritableStream;
  env: Record<string, string | undefined>;
  /** The folder `--tools fs` works under. */
  cwd: string;
}

const processTerminal = (): ChatTerminal => ({ stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() });

/** Why the chat could not start, in one line with what to do about it. */
function startError(err: unknown, options: ChatOptions): string {
  if (!(err instanceof RozError)) return err instanceof Error ? err.message : String(err);
  const hint =
    err.code === "unauthenticated"
      ? " (set ROZ_KEY or --key to an API key)"
      : err.code === "unavailable"
        ? ` (is a roz server listening on ${options.url}? set ROZ_URL or --url)`
        : err.code === "not_found" && options.sessionId
          ? ` (no session ${options.sessionId} here)`
          : "";
  return `${err.code}: ${err.message}${hint}`;
}

/**
 * `roz chat`: a conversation with a session of the server at `--url`/`ROZ_URL`, on
 * `@roz/client`. At a terminal it streams the answer above a prompt the user types into while
 * the agent works; without one it reads one message per line and writes plain text. Resolves
 * with the exit code: 0, 1 when the session could not start, was lost or (without a terminal)
 * a turn failed. Usage errors throw `invalid_argument`.
 */
export async function runChatCommand(argv: string[], io: CliOutput, term: ChatTerminal = processTerminal()): Promise<number> {
  const options = parseChatArgs(argv, term.env);
  if (options.help) {
    io.out(CHAT_USAGE);
    return 0;
  }
  const tty = Boolean(term.stdin.isTTY && term.stdout.isTTY);
  const style = tty ? ansiStyle : plainStyle;
  const roz = new RozClient({ baseUrl: options.url, apiKey: options.key });
  // A terminal's screen needs the line reader, made once the session is open: plain text until then.
  let screen: Screen = new PlainScreen(term.stdout, term.stderr);
  const proxy: Screen = {
    write: (t) => screen.write(t),
    note: (l) => screen.note(l),
    setPrompt: (p) => screen.setPrompt(p),
    close: () => screen.close(),
    get atLineStart() {
      return screen.atLineStart;
    },
  };
  let chat: Chat | undefined;
  const asker = new Asker({ screen: proxy, style, policy: options.approve ?? (tty ? "ask" : "none"), changed: () => chat?.refreshPrompt() });
  const tools = options.tools === "fs" ? fsTools(term.cwd, (q) => asker.ask(q)) : undefined;
  let gone!: (code: number) => void;
  const ended = new Promise<number>((resolve) => (gone = resolve));
  chat = new Chat({ roz, screen: proxy, style, asker, tools, echoOwn: tty, gone });
  try {
    await chat.open(options);
  } catch (err) {
    roz.close();
    io.err(`roz chat: ${startError(err, options)}`);
    return 1;
  }
  // Made once the session is open: until then, Ctrl-C at a terminal simply stops the process.
  const rl = createInterface({ input: term.stdin, ...(tty ? { output: term.stdout, terminal: true } : { terminal: false }) });
  try {
    const s = chat.session;
    const about = `session ${s.id}${s.model ? ` · model ${s.model}` : ""} · ${options.url}`;
    if (!tty) {
      screen.note(`roz chat: ${about}`);
      return await plainLoop({ chat, screen, style, gone: ended, onCtrlC: onSigint }, rl);
    }
    const ttyScreen = new TtyScreen(term.stdout, rl);
    screen.close();
    screen = ttyScreen;
    screen.note(`roz chat · ${about}`);
    screen.note(style.dim("Type a message (while the agent works it waits its turn); /help lists the commands; Ctrl-C cancels a turn, twice detaches."));
    chat.refreshPrompt();
    const onCtrlC = (h: () => void) => {
      rl.on("SIGINT", h);
      return () => void rl.off("SIGINT", h);
    };
    return await ttyLoop({ chat, screen, style, gone: ended, onCtrlC }, rl, ttyScreen, asker);
  } finally {
    screen.close();
    rl.close();
    roz.close();
  }
}

/** Ctrl-C without a terminal arrives as SIGINT. */
function onSigint(handler: () => void): () => void {
  process.on("SIGINT", handler);
  return () => void process.off("SIGINT", handler);
}
