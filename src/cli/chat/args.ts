import { parseArgs } from "node:util";
import { RozError } from "../../errors/index.ts";

/** What an approval is answered with when nobody is asked: `ask` (the default at a terminal) asks y/n. */
export type ApprovePolicy = "ask" | "all" | "none";

export interface ChatOptions {
  url: string;
  key: string | undefined;
  model: string | undefined;
  /** Re-attach to this session instead of starting one. */
  sessionId: string | undefined;
  /** `fs`: offer read_file and list_dir under the working directory. */
  tools: "fs" | undefined;
  /** Unset: `ask` at a terminal, `none` without one. */
  approve: ApprovePolicy | undefined;
  help: boolean;
}

export const DEFAULT_URL = "http://127.0.0.1:8080";

/** The usage text of `roz chat`, printed with `--help` and after every usage error. */
export const CHAT_USAGE = [
  "usage: roz chat [--url URL] [--key KEY] [--model MODEL] [--session ID] [--tools fs] [--approve all|none]",
  "  --url URL        the server (default: $ROZ_URL, else http://127.0.0.1:8080)",
  "  --key KEY        an API key roz_sk_… (default: $ROZ_KEY)",
  "  --model MODEL    the session's model (default: the server's)",
  "  --session ID     re-attach to a running session and go on with it",
  "  --tools fs       offer read_file and list_dir under the current folder (paths outside it are asked y/n)",
  "  --approve all|none  answer every approval without asking (default: ask at a terminal, none without one)",
  "",
  "Type a message and Enter. While the agent works, a message waits for its own turn (queue).",
  "  /steer TEXT      the running turn takes TEXT into account",
  "  /interrupt TEXT  cancels the running turn and answers TEXT next",
  "  /cancel          cancels the running turn",
  "  /fork            goes on in a copy of the session (the original keeps running)",
  "  /rollback [N]    hides the last N turns (default 1) from the model",
  "  /session         shows the session's id, last seq and status",
  "  /detach          exits and leaves the session running (re-attach with --session ID)",
  "  /exit            ends the session and exits (so does end of input, Ctrl-D)",
  "  //TEXT           sends /TEXT as a message",
  "Ctrl-C cancels the running turn; twice within a second and a half, it detaches and exits.",
  "Without a terminal, each line of stdin is one message, sent when the turn before it has ended.",
].join("\n");

const usage = (message: string): never => {
  throw new RozError("invalid_argument", `${message}\n${CHAT_USAGE}`);
};

function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) usage(`--${flag} "${value}": expected ${allowed.join(" or ")}`);
  return value as T;
}

/** Parses `roz chat` arguments; the environment gives `ROZ_URL` and `ROZ_KEY` when the flags do not. */
export function parseChatArgs(argv: string[], env: Record<string, string | undefined>): ChatOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        url: { type: "string" },
        key: { type: "string" },
        model: { type: "string" },
        session: { type: "string" },
        tools: { type: "string" },
        approve: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    return usage((err as Error).message);
  }
  const v = parsed.values;
  const url = v.url ?? env["ROZ_URL"] ?? DEFAULT_URL;
  if (!/^https?:\/\/[^/]/.test(url)) usage(`the server URL "${url}" must start with http:// or https://`);
  return {
    url: url.replace(/\/+$/, ""),
    key: v.key ?? (env["ROZ_KEY"] || undefined),
    model: v.model,
    sessionId: v.session,
    tools: oneOf("tools", v.tools, ["fs"] as const),
    approve: oneOf("approve", v.approve, ["all", "none"] as const),
    help: v.help ?? false,
  };
}
