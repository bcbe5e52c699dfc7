import type { RozError, Turn } from "@roz/client";
import { CHAT_USAGE } from "./args.ts";
import type { Chat } from "./chat.ts";
import { type Screen, writeLine } from "./screen.ts";
import type { Style } from "./style.ts";

/** What a typed line did: sent a message (its turn), ran a command, or asks to leave. */
export type LineOutcome = { kind: "sent"; turn: Turn } | { kind: "done" } | { kind: "exit" } | { kind: "detach" };

const done: LineOutcome = { kind: "done" };

/** The commands' help: the part of the usage after the flags. */
const commandHelp = (): string => CHAT_USAGE.slice(CHAT_USAGE.indexOf("Type a message"));

/**
 * Runs one line: a message (sent with `queue` delivery), or a `/command`. Command failures
 * (a refused rollback, no turn to cancel) are written and the chat goes on.
 */
export async function runLine(line: string, chat: Chat, ui: { screen: Screen; style: Style }): Promise<LineOutcome> {
  const text = line.trim();
  if (text === "") return done;
  if (text.startsWith("//")) return { kind: "sent", turn: chat.send(text.slice(1)) };
  if (!text.startsWith("/")) return { kind: "sent", turn: chat.send(text) };
  const [name = "", ...rest] = text.slice(1).split(/\s+/);
  const arg = rest.join(" ");
  try {
    return await command(name, arg, chat, ui);
  } catch (err) {
    const e = err as RozError;
    ui.screen.note(ui.style.red(`/${name}: ${e.code ? `${e.code}: ` : ""}${e.message}`));
    return done;
  }
}

async function command(name: string, arg: string, chat: Chat, { screen, style }: { screen: Screen; style: Style }): Promise<LineOutcome> {
  const needsText = (): string => {
    if (arg === "") throw new Error(`usage: /${name} TEXT`);
    return arg;
  };
  switch (name) {
    case "steer":
      return { kind: "sent", turn: chat.send(needsText(), "steer") };
    case "interrupt":
      return { kind: "sent", turn: chat.send(needsText(), "interrupt") };
    case "cancel":
      if (!chat.renderer.running) writeLine(screen, style.dim("(no turn is running)"));
      else await chat.session.cancelTurn({ reason: "cancelled in roz chat" });
      return done;
    case "fork":
      await chat.fork();
      return done;
    case "rollback": {
      const turns = arg === "" ? 1 : Number(arg);
      if (!Number.isInteger(turns) || turns < 1) throw new Error(`usage: /rollback [N], N a whole number ≥ 1 (got "${arg}")`);
      // The answer (`rolled_back`) is written with the session's events.
      await chat.session.rollback(turns);
      return done;
    }
    case "session":
      writeLine(screen, chat.describe());
      return done;
    case "help":
      writeLine(screen, commandHelp());
      return done;
    case "exit":
    case "quit":
      return { kind: "exit" };
    case "detach":
      return { kind: "detach" };
    default:
      screen.note(style.yellow(`unknown command /${name} (/help lists them; //TEXT sends /TEXT)`));
      return done;
  }
}
