/**
 * The container engine of the image test: Debian's podman with runc, its state kept apart from
 * the machine's in one folder (images, containers, networks, the compose socket). That folder is
 * also the cache of the base images: delete it and the next run builds everything from nothing.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The tools the test needs, by the Debian package that brings each. */
const TOOLS: Record<string, string> = {
  podman: "podman",
  runc: "runc",
  debootstrap: "debootstrap",
  "docker-compose": "docker-compose",
  "/usr/lib/podman/netavark": "netavark",
  "/usr/lib/podman/aardvark-dns": "aardvark-dns",
  // netavark sets up the compose network's NAT with it, and fails with a bare "No such file" without.
  iptables: "iptables",
};

const onPath = (tool: string): Promise<boolean> =>
  run("sh", ["-c", `command -v "$1"`, "sh", tool]).then(
    () => true,
    () => false,
  );

/** Why podman cannot run containers here, or undefined when it can. */
export async function engineProblem(): Promise<string | undefined> {
  const missing: string[] = [];
  for (const [tool, pkg] of Object.entries(TOOLS)) if (!(await onPath(tool))) missing.push(pkg);
  if (missing.length > 0) return `missing ${missing.join(", ")} (apt-get install ${missing.join(" ")})`;
  if (process.getuid?.() !== 0) return "the image test runs podman as root (debootstrap and the bridge network need it)";
  return undefined;
}

export interface Engine {
  /** The folder holding the engine's state. */
  readonly dir: string;
  /** The environment every podman and compose command of the test runs with. */
  readonly env: NodeJS.ProcessEnv;
  /** Runs podman, resolves with its stdout; rejects with its stderr. */
  podman(args: readonly string[], options?: { cwd?: string; input?: string }): Promise<string>;
}

/** Runs a command to its end; rejects with the tail of its output. Output goes to `log` as it comes when given. */
export function command(
  file: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; log?: (chunk: string) => void; input?: string } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: options.env ?? process.env, cwd: options.cwd, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let output = "";
    const keep = (chunk: Buffer, isStdout: boolean): void => {
      const text = chunk.toString();
      if (isStdout) stdout += text;
      output = (output + text).slice(-8000);
      options.log?.(text);
    };
    child.stdout.on("data", (chunk: Buffer) => keep(chunk, true));
    child.stderr.on("data", (chunk: Buffer) => keep(chunk, false));
    child.stdin.end(options.input ?? "");
    child.once("error", reject);
    child.once("close", (code, signal) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`${file} ${args.join(" ")}: exit ${signal ?? code}\n${output}`));
    });
  });
}

/**
 * Writes the engine's configuration into `dir`: runc (Debian's crun refuses this machine's
 * hybrid cgroups), explicit limits (podman's defaults are above what this machine lets a
 * process raise its own to, and setrlimit is refused: open files get the host's hard limit, which
 * HAProxy's maxconn needs), and netavark with aardvark-dns, so that the compose services find
 * each other by name.
 */
export function openEngine(dir: string): Engine {
  mkdirSync(dir, { recursive: true });
  const containersConf = join(dir, "containers.conf");
  const storageConf = join(dir, "storage.conf");
  const openFiles = Math.min(Number(execFileSync("sh", ["-c", "ulimit -Hn"], { encoding: "utf8" }).trim()) || 1024, 1_048_576);
  writeFileSync(
    containersConf,
    [
      "[containers]",
      `default_ulimits = ["nofile=${openFiles}:${openFiles}", "nproc=1024:1024"]`,
      "[engine]",
      'runtime = "runc"',
      `tmp_dir = "${join(dir, "libpod")}"`,
      "[network]",
      'network_backend = "netavark"',
      `network_config_dir = "${join(dir, "networks")}"`,
      "",
    ].join("\n"),
  );
  writeFileSync(storageConf, ["[storage]", 'driver = "overlay"', `graphroot = "${join(dir, "storage")}"`, `runroot = "${join(dir, "run")}"`, ""].join("\n"));
  const env = { ...process.env, CONTAINERS_CONF: containersConf, CONTAINERS_STORAGE_CONF: storageConf };
  return { dir, env, podman: (args, options = {}) => command("podman", args, { env, ...options }) };
}

/** Whether the Docker-compatible API answers its ping on `socket`. */
const answers = (socket: string): Promise<boolean> =>
  new Promise((resolve) => {
    const ping = request({ socketPath: socket, path: "/_ping", timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    ping.once("error", () => resolve(false));
    ping.end();
  });

/** podman's Docker-compatible API on a socket in the engine's folder, for docker-compose. */
export async function startApiService(engine: Engine): Promise<{ dockerHost: string; stop(): Promise<void> }> {
  const socket = join(engine.dir, "podman.sock");
  const child: ChildProcess = spawn("podman", ["system", "service", "--time", "0", `unix://${socket}`], { env: engine.env, stdio: "ignore" });
  const dockerHost = `unix://${socket}`;
  for (let i = 0; !(await answers(socket)); i++) {
    if (i > 100 || child.exitCode !== null) throw new Error("podman system service did not answer on its socket");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    dockerHost,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * Runs the HEALTHCHECK of every running container that has one, every `intervalMs`. podman
 * schedules health checks with systemd timers, and this machine has no systemd: without this,
 * a status stays `starting` and `depends_on: service_healthy` waits forever.
 */
export function driveHealthchecks(engine: Engine, intervalMs: number): { stop(): void } {
  let stopped = false;
  const round = async (): Promise<void> => {
    const ids = (await engine.podman(["ps", "-q", "--filter", "health=starting"]).catch(() => ""))
      .concat(await engine.podman(["ps", "-q", "--filter", "health=healthy"]).catch(() => ""))
      .concat(await engine.podman(["ps", "-q", "--filter", "health=unhealthy"]).catch(() => ""))
      .split("\n")
      .filter((id) => id !== "");
    await Promise.all(ids.map((id) => engine.podman(["healthcheck", "run", id]).catch(() => undefined)));
  };
  const loop = async (): Promise<void> => {
    while (!stopped) {
      await round();
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  };
  void loop();
  return {
    stop() {
      stopped = true;
    },
  };
}
