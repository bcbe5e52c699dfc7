// `roz chat` as a script runs it: the real command in its own process, stdin a pipe (no
// terminal), against a real server on the scripted model.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script } from "../conformance/support.ts";
import { repoRoot, serverNodeFlags, startServer, type TestServer } from "../support/server.ts";

let server: TestServer;
let folder: string;
beforeAll(async () => {
  server = await startServer({
    ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "list_dir", policy: "require_confirmation", reason: "lists files" }]),
  });
  folder = await mkdtemp(join(tmpdir(), "roz-chat-"));
  await writeFile(join(folder, "notes.txt"), "hello from notes\nsecond line\n");
});
afterAll(async () => {
  await server?.close();
  if (folder) await rm(folder, { recursive: true, force: true });
});

/** One `roz chat` process: its output so far, lines to its stdin, signals, and its end. */
class Chat {
  readonly child: ChildProcessWithoutNullStreams;
  stdout = "";
  stderr = "";
  readonly exited: Promise<number | null>;

  constructor(args: string[], cwd = folder) {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("ROZ_")));
    this.child = spawn(process.execPath, [...serverNodeFlags, join(repoRoot, "src/main.ts"), "chat", ...args], { cwd, env: { ...env, ROZ_URL: server.url } });
    this.child.stdout.setEncoding("utf8").on("data", (chunk: string) => (this.stdout += chunk));
    this.child.stderr.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
  }

  send(...lines: string[]): void {
    this.child.stdin.write(lines.map((l) => `${l}\n`).join(""));
  }

  /** Sends `lines`, ends stdin and resolves with the exit code once the process is done. */
  async run(...lines: string[]): Promise<number | null> {
    this.child.stdin.end(lines.map((l) => `${l}\n`).join(""));
    return this.exited;
  }

  /** Waits until stdout (or stderr) matches `pattern`. */
  async waitFor(pattern: RegExp, stream: "stdout" | "stderr" = "stdout"): Promise<void> {
    await expect.poll(() => this[stream], { timeout: 30_000, interval: 50 }).toMatch(pattern);
  }

  get sessionId(): string {
    return /session ([0-9a-f-]{36})/.exec(this.stderr)?.[1] ?? "";
  }
}

const rest = async (path: string): Promise<Record<string, unknown>> => (await fetch(`${server.url}${path}`)).json() as Promise<Record<string, unknown>>;
const usageLines = (out: string): string[] => out.split("\n").filter((l) => /^\[\w+ · \d+ tokens? in.* · \$\d+\.\d{4}\]$/.test(l));

// One process at a time: each starts Node and the client library, which a loaded machine makes slow.
describe("roz chat without a terminal", { timeout: 90_000 }, () => {
  it("sends each line when the turn before it ended, writes plain text, answers /session, and ends the session at the end of input", async () => {
    const chat = new Chat([]);
    const code = await chat.run(
      "hello",
      "/session",
      script([[{ thinking: "Let me see." }, { text: "Second answer." }]], { usage: { input_tokens: 7, output_tokens: 3 } }),
    );
    expect(code, chat.stderr).toBe(0);
    expect(chat.stdout).not.toContain("\x1b");
    const id = chat.sessionId;
    expect(id).not.toBe("");
    const lines = chat.stdout.split("\n");
    const at = (text: string | RegExp): number => lines.findIndex((l) => (typeof text === "string" ? l === text : text.test(l)));
    expect(at("You said: hello")).toBeGreaterThanOrEqual(0);
    expect(at(new RegExp(`^session ${id} · seq \\d+ · live · idle · model scripted/default$`))).toBeGreaterThan(at("You said: hello"));
    expect(at("thinking: Let me see.")).toBeGreaterThan(at(/^session /));
    expect(at("Second answer.")).toBeGreaterThan(at("thinking: Let me see."));
    expect(usageLines(chat.stdout)).toHaveLength(2);
    expect(usageLines(chat.stdout)[1]).toBe("[end_turn · 7 tokens in, 3 tokens out · $0.0000]");
    const session = await rest(`/v1/sessions/${id}`);
    expect(session).toMatchObject({ status: "cancelled", turn_count: 2, title: "roz chat" });
  });

  it("--tools fs reads a file under the working folder; a missing path, one outside it and an approval are refused without a terminal", async () => {
    const chat = new Chat(["--tools", "fs"]);
    const outside = join(repoRoot, "package.json");
    const code = await chat.run(
      script([
        [{ tool_call: { name: "read_file", arguments: { path: "notes.txt" } } }],
        // Two failing cycles, then the model would stop (tool_error_limit is three).
        [{ tool_call: { name: "read_file", arguments: { path: "missing.txt" } } }, { tool_call: { name: "read_file", arguments: { path: outside } } }],
        [{ tool_call: { name: "list_dir", arguments: {} } }],
        [{ text: "Read." }],
      ]),
    );
    expect(code, chat.stderr).toBe(0);
    expect(chat.stdout).toContain('→ read_file {"path":"notes.txt"}\n  ← hello from notes … (2 lines)\n');
    expect(chat.stdout).toContain("  ← failed: missing.txt: no such file or directory\n");
    expect(chat.stdout).toContain(`? read_file ${outside} is outside ${folder}: allow? → no (no one to ask; --approve all approves)\n`);
    expect(chat.stdout).toContain(`  ← failed: ${outside} is outside the working folder and the user did not allow it\n`);
    expect(chat.stdout).toContain("? approve list_dir {} (lists files)? → no (no one to ask; --approve all approves)\n");
    expect(chat.stdout).toMatch(/ {2}✗ list_dir not run \(approval_denied\)/);
    expect(chat.stdout).toContain("Read.\n");
  });

  it("--approve all approves without asking, also a path outside the folder", async () => {
    const chat = new Chat(["--tools", "fs", "--approve", "all"]);
    expect(await chat.run(script([[{ tool_call: { name: "list_dir", arguments: { path: ".." } } }], [{ text: "Listed." }]])), chat.stderr).toBe(0);
    expect(chat.stdout).toContain('? approve list_dir {"path":".."} (lists files)? → yes (--approve all)\n');
    expect(chat.stdout).toMatch(/\? list_dir \S+ is outside \S+: allow\? → yes \(--approve all\)\n {2}← \S+/);
    expect(chat.stdout).not.toContain("not run");
  });

  it("Ctrl-C cancels the running turn; twice, it leaves the session running; --session ID goes on with it, and shows an ended one", async () => {
    const first = new Chat([]);
    first.send("hello");
    await first.waitFor(/^\[end_turn/m);
    first.send(script([[{ text: "slow" }, { delay_ms: 20_000 }, { text: " never" }]]));
    await first.waitFor(/^slow/m);
    first.child.kill("SIGINT");
    await first.waitFor(/^\[cancelled · /m);
    await first.waitFor(/Ctrl-C again to detach/, "stderr");
    first.child.kill("SIGINT");
    expect(await first.exited, first.stderr).toBe(0);
    const id = first.sessionId;
    expect(first.stderr).toContain(`detached: session ${id} keeps running on the server; re-attach with: roz chat --session ${id}`);
    expect(await rest(`/v1/sessions/${id}`)).toMatchObject({ status: "detached", turn_count: 2 });

    const again = new Chat(["--session", id]);
    expect(await again.run("again", "/session"), again.stderr).toBe(0);
    // The conversation so far is written first, then what this process added.
    const replayEnd = again.stdout.indexOf("── re-attached: live from here ──");
    expect(replayEnd).toBeGreaterThan(again.stdout.indexOf("› hello\n"));
    expect(again.stdout.indexOf("You said: hello")).toBeLessThan(replayEnd);
    expect(again.stdout.indexOf("You said: again")).toBeGreaterThan(replayEnd);
    expect(again.stdout).toMatch(new RegExp(`^session ${id} · seq \\d+ · live · idle · model scripted/default$`, "m"));
    expect(await rest(`/v1/sessions/${id}`)).toMatchObject({ status: "cancelled", turn_count: 3 });

    // The end of input ended it: it can be shown, not continued.
    const late = new Chat(["--session", id]);
    expect(await late.run()).toBe(1);
    expect(late.stdout).toContain("You said: again");
    expect(late.stderr).toContain(`roz chat: session ${id} has ended: its conversation is above; it cannot go on (start a new one)`);
  });
});
