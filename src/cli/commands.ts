import { loadConfig, settingsHelp } from "../app/config.ts";
import { RozError } from "../errors/index.ts";
import { runBudgetsCommand } from "./budgets.ts";
import { CHAT_USAGE, runChatCommand } from "./chat/index.ts";
import { runHealthcheck } from "./healthcheck.ts";
import { type CliOutput, keysCreate, keysList, keysRevoke, SCOPES_HINT } from "./keys.ts";

/** One sub-command of `roz`. */
export interface Command {
  /** The words that name it, e.g. `keys create`; the first one is its group. */
  readonly name: string;
  /** Its arguments, as the usage line shows them. */
  readonly args: string;
  /** What it does, for `--help`. */
  readonly does: string;
  /** Its own `--help` text, when the generated usage lines are not enough. */
  readonly help?: string;
  /** Runs it with the words after its name; resolves with the exit code. Throws `invalid_argument` for bad usage. */
  run(args: string[], io: CliOutput): Promise<number>;
}

/** Every sub-command: the dispatch and `--help` are both made from this table, so a new command is one entry. */
export const commands: readonly Command[] = [
  {
    name: "keys create",
    args: "--tenant NAME [--scopes s1,s2] [--name LABEL] [--expires-in-days N]",
    does: `creates an API key in the store and prints it, only this once; ${SCOPES_HINT}`,
    run: (args, io) => keysCreate(args, loadConfig(), io),
  },
  {
    name: "keys list",
    args: "--tenant NAME",
    does: "lists a tenant's keys: prefix, scopes, created, last used, state",
    run: (args, io) => keysList(args, loadConfig(), io),
  },
  { name: "keys revoke", args: "--tenant NAME KEY_ID", does: "revokes a key: it stops working at once", run: (args, io) => keysRevoke(args, loadConfig(), io) },
  {
    name: "budgets set",
    args: "--tenant NAME [--monthly-tokens N|none] [--monthly-cost-usd X|none]",
    does: "sets a tenant's limits per calendar month (UTC), input + output tokens and USD; `none` removes one, one not named is kept",
    run: (args, io) => runBudgetsCommand(["set", ...args], loadConfig(), io),
  },
  {
    name: "budgets show",
    args: "--tenant NAME",
    does: "a tenant's monthly budget and this month's spend",
    run: (args, io) => runBudgetsCommand(["show", ...args], loadConfig(), io),
  },
  {
    name: "chat",
    args: "[--url URL] [--key KEY] [--model MODEL] [--session ID] [--tools fs] [--approve all|none]",
    does: "talks to a server from the terminal (ROZ_URL, ROZ_KEY), on @roz/client; `roz chat --help` lists its / commands",
    help: CHAT_USAGE,
    run: (args, io) => runChatCommand(args, io),
  },
  {
    name: "healthcheck",
    args: "",
    does: "exits 0 when the server of this configuration answers /healthz (the image's HEALTHCHECK)",
    run: (args, io) => (args.length > 0 ? usage(`unexpected argument "${args[0]}"`) : runHealthcheck(loadConfig(), io)),
  },
];

const usage = (message: string): never => {
  throw new RozError("invalid_argument", message);
};

const words = (c: Command): string[] => c.name.split(" ");

/** The usage lines of `commands`: the command line, then what it does. */
function usageLines(of: readonly Command[]): string[] {
  return of.flatMap((c) => [`  roz ${c.name}${c.args ? ` ${c.args}` : ""}`, `      ${c.does}`]);
}

/** The `--help` text: every command, then every setting with its default. */
export function helpText(): string {
  return [
    "roz — agent-session server (roz.v1.AgentService + REST on one port)",
    "",
    "usage:",
    "  roz",
    "      runs the server, configured by the environment variables below",
    "  roz --help",
    "      prints this text (`roz GROUP --help`: the commands of one group, e.g. `roz keys --help`)",
    ...usageLines(commands),
    "",
    settingsHelp(),
  ].join("\n");
}

/**
 * Runs the sub-command `argv` names, resolving with its exit code, or returns undefined when
 * `argv` names none (no words: the server runs). Help is printed for `--help`/`-h`; a usage
 * error is thrown as `invalid_argument` with the usage of the command's group appended.
 */
export function runCommand(argv: string[], io: CliOutput): Promise<number> | undefined {
  if (argv.length === 0) return undefined;
  const help = argv.includes("--help") || argv.includes("-h");
  const group = commands.filter((c) => words(c)[0] === argv[0]);
  if (group.length === 0) {
    if (help) {
      io.out(helpText());
      return Promise.resolve(0);
    }
    return Promise.reject(new RozError("invalid_argument", `unknown command "${argv.join(" ")}"\n\n${helpText()}`));
  }
  const groupUsage = ["usage:", ...usageLines(group)].join("\n");
  if (help) {
    io.out(group.length === 1 && group[0]!.help !== undefined ? group[0]!.help : groupUsage);
    return Promise.resolve(0);
  }
  const command = group.find((c) => words(c).every((w, i) => argv[i] === w));
  const withUsage = (err: unknown): never => {
    if (err instanceof RozError && err.code === "invalid_argument") throw new RozError("invalid_argument", `${err.message}\n${groupUsage}`);
    throw err;
  };
  if (command === undefined) return Promise.reject(new RozError("invalid_argument", `unknown ${argv[0]} command "${argv[1] ?? ""}"`)).catch(withUsage);
  return command.run(argv.slice(words(command).length), io).catch(withUsage);
}
