import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type App, type AppOverrides, createApp } from "../../src/app/app.ts";
import { loadConfig } from "../../src/app/config.ts";

/** The repository root (where `src/main.ts` lives). */
export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The flags Node is given by `npm start` (`node FLAGS src/main.ts` in package.json): every
 * launch of the real server here uses them too, as the Docker image does.
 */
export const serverNodeFlags: readonly string[] = (() => {
  const { scripts } = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> };
  const words = (scripts["start"] ?? "").split(/\s+/);
  if (words[0] !== "node" || words.at(-1) !== "src/main.ts") throw new Error(`npm start is not \`node [flags] src/main.ts\`: ${scripts["start"]}`);
  return words.slice(1, -1);
})();

/** Settings every test server gets unless the test overrides them. */
const testDefaults: Record<string, string> = {
  ROZ_HOST: "127.0.0.1",
  ROZ_PORT: "0",
  ROZ_LOG_LEVEL: "silent",
  ROZ_AUTH: "disabled",
  ROZ_SHUTDOWN_GRACE_MS: "1000",
  // Suites start many sessions quickly; rate-limit tests set their own limits.
  ROZ_SESSION_RATE_LIMIT_PER_MINUTE: "0",
  ROZ_RATE_LIMIT_PER_MINUTE: "0",
};

/** Environment variables of the host that would leak real configuration into a test server. */
const leaks = (name: string): boolean =>
  name.startsWith("ROZ_") || name.startsWith("OTEL_") || ["OPENAI_API_KEY", "OPENAI_BASE_URL", "DATABASE_URL", "NATS_URL"].includes(name);

export interface TestServer {
  /** Base URL, e.g. `http://127.0.0.1:40123` (`https://` with TLS). */
  readonly url: string;
  readonly port: number;
  readonly app: App;
  /** Closes the app (graceful drain) and removes its data folder. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts the real app in this process on 127.0.0.1, port 0, log level silent, with a fresh
 * temporary `ROZ_DATA_DIR`. Only `env` configures it: the host's `ROZ_*` variables are ignored.
 */
export async function startServer(env: Record<string, string> = {}, overrides: AppOverrides = {}): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), "roz-data-"));
  const config = loadConfig({ ...testDefaults, ROZ_DATA_DIR: dataDir, ...env });
  let app: App;
  try {
    app = await createApp(config, overrides);
  } catch (err) {
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const url = await app.listen();
  const port = (app.fastify.server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    app,
    close: () => (closing ??= app.close().finally(() => rm(dataDir, { recursive: true, force: true }))),
  };
}

/** The live (active or detached) session with this id, whatever its tenant. */
export function liveSession(app: App, sessionId: string) {
  return app.registry.all().find((session) => session.id === sessionId);
}

/** How a child process ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnedServer {
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** Everything the process printed so far. */
  stdout(): string;
  stderr(): string;
  /** The JSON log lines printed so far (non-JSON lines are skipped). */
  logLines(): Record<string, unknown>[];
  /** Resolves when the process has exited. */
  readonly exited: Promise<ExitStatus>;
  /** Sends `signal` (default SIGTERM) and resolves with the exit status. */
  stop(signal?: NodeJS.Signals): Promise<ExitStatus>;
  /** SIGKILLs the process if it still runs and removes its data folder (for afterAll). */
  dispose(): Promise<void>;
}

function childEnv(env: Record<string, string>, dataDir: string): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !leaks(name)));
  return { ...base, ...testDefaults, ROZ_LOG_LEVEL: "info", ROZ_DATA_DIR: dataDir, ...env };
}

const parseJsonLines = (text: string): Record<string, unknown>[] =>
  text
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });

/**
 * Runs the real CLI (`node src/main.ts`, with `serverNodeFlags`) with the same Node as the tests, port 0 and log
 * level info, and resolves once it logged `roz listening on <url>` (rejects with its output
 * if it exits first or does not listen within `startTimeoutMs`).
 */
export async function spawnServer(env: Record<string, string> = {}, startTimeoutMs = 20_000): Promise<SpawnedServer> {
  const dataDir = await mkdtemp(join(tmpdir(), "roz-data-"));
  const child = spawn(process.execPath, [...serverNodeFlags, "src/main.ts"], { cwd: repoRoot, env: childEnv(env, dataDir), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  const exited = new Promise<ExitStatus>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`roz did not listen within ${startTimeoutMs} ms\nstdout:\n${out}\nstderr:\n${err}`)), startTimeoutMs);
    const check = (): void => {
      const line = parseJsonLines(out).find((l) => typeof l["url"] === "string" && String(l["msg"]).startsWith("roz listening on"));
      if (line) finish(undefined, line["url"] as string);
    };
    const onExit = (status: ExitStatus): void => finish(new Error(`roz exited (${JSON.stringify(status)}) before listening\nstdout:\n${out}\nstderr:\n${err}`));
    function finish(error?: Error, value?: string): void {
      clearTimeout(timer);
      child.stdout.off("data", check);
      if (error) reject(error);
      else resolve(value as string);
    }
    child.stdout.on("data", check);
    void exited.then(onExit);
  }).catch(async (error: unknown) => {
    child.kill("SIGKILL");
    await exited;
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  });

  return {
    url,
    port: Number(new URL(url).port),
    child,
    stdout: () => out,
    stderr: () => err,
    logLines: () => parseJsonLines(out),
    exited,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    async dispose() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `node src/main.ts ...args` (with `serverNodeFlags`) to completion (for `--help`, configuration errors and
 * sub-commands). Without `ROZ_DATA_DIR` in `env` it gets a temporary one, removed afterwards.
 */
export async function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<ExitStatus & { stdout: string; stderr: string }> {
  const ownDir = env["ROZ_DATA_DIR"] === undefined ? await mkdtemp(join(tmpdir(), "roz-cli-")) : undefined;
  try {
    return await new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        [...serverNodeFlags, "src/main.ts", ...args],
        { cwd: repoRoot, env: childEnv(env, ownDir ?? ""), timeout: timeoutMs, encoding: "utf8" },
        (_error, stdout, stderr) => resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr }),
      );
    });
  } finally {
    if (ownDir) await rm(ownDir, { recursive: true, force: true });
  }
}

/** One check of `/readyz` (`server`, `store`, `bus`), with the reason when it failed. */
export interface ReadinessCheck {
  name: string;
  ok: boolean;
  error?: string;
}

/** A server's `/readyz`: its status (200 ready, 503 not) and its checks. */
export async function readyz(url: string): Promise<{ status: number; checks: ReadinessCheck[] }> {
  const r = await fetch(`${url}/readyz`);
  return { status: r.status, checks: ((await r.json()) as { checks: ReadinessCheck[] }).checks };
}

/** The value of the first `/metrics` line that `line` matches (its group 1), undefined when none does. */
export async function metric(url: string, line: RegExp): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = line.exec(text);
  return m ? Number(m[1]) : undefined;
}
