/**
 * A real nats-server with JetStream for tests: `nats-server -js -a 127.0.0.1 -p <free port>
 * -sd <temp dir>`, started and stopped by the test. It can be killed and started again on the
 * same port and store directory (what a restart of NATS looks like to the nodes).
 *
 * `natsForTests()` is what test files call: it returns undefined (after a visible
 * `console.warn`) when no nats-server binary is installed, and throws instead under `CI=true`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestNats {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Stops the server with `signal` (SIGKILL, like a crash, unless told) and resolves once it has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and store (emptied first with `wipeStore`); resolves once it accepts connections. */
  start(options?: { wipeStore?: boolean }): Promise<void>;
  /**
   * A restart: `kill(signal)`, then `whileDown()` (what the test checks during the outage),
   * then `start(options)`, which runs even when `whileDown` throws (whose error is then rethrown).
   */
  restart(options?: { signal?: NodeJS.Signals; wipeStore?: boolean; whileDown?: () => Promise<void> }): Promise<void>;
  /** Stops it and removes its store. Idempotent. */
  stop(): Promise<void>;
  /** What the server printed (for a failing test's message). */
  log(): string;
}

const CANDIDATES = [process.env.ROZ_TEST_NATS_SERVER, "/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"];

export function findNatsServer(): string | undefined {
  for (const path of CANDIDATES) {
    if (!path) continue;
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not there
    }
  }
  return undefined;
}

/** See the module comment. */
export async function natsForTests(): Promise<TestNats | undefined> {
  const bin = findNatsServer();
  if (bin === undefined) {
    const reason = "no nats-server binary found (apt-get install nats-server, or set ROZ_TEST_NATS_SERVER)";
    if (process.env.CI === "true") throw new Error(`nats-server required in CI but unavailable: ${reason}`);
    console.warn(`[nats] tests skipped: ${reason}`);
    return undefined;
  }
  return startNats(bin);
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Resolves once something accepts TCP connections on the port (rejects after `timeoutMs`). */
export async function waitForPort(port: number, timeoutMs = 20_000, exited?: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const gone = exited?.();
    if (gone !== undefined) throw new Error(gone);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: "127.0.0.1", port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function startNats(bin: string): Promise<TestNats> {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), "roz-nats-"));
  let child: ChildProcess | undefined;
  let output = "";
  let stopped = false;

  const start = async (options: { wipeStore?: boolean } = {}): Promise<void> => {
    if (options.wipeStore) {
      rmSync(storeDir, { recursive: true, force: true });
      mkdirSync(storeDir);
    }
    const proc = spawn(bin, ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDir], { stdio: ["ignore", "pipe", "pipe"] });
    child = proc;
    let exitedWith: string | undefined;
    proc.once("exit", (code, signal) => {
      exitedWith = `nats-server exited (${signal ?? code}) before listening:\n${output.slice(-2000)}`;
    });
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-64_000);
    };
    proc.stdout!.on("data", keep);
    proc.stderr!.on("data", keep);
    await waitForPort(port, 20_000, () => exitedWith);
  };

  const kill = async (signal: NodeJS.Signals = "SIGKILL"): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once("exit", resolve));
    proc.kill(signal);
    await exited;
  };

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    kill,
    start,
    async restart({ signal, wipeStore, whileDown } = {}) {
      await kill(signal);
      try {
        await whileDown?.();
      } finally {
        await start({ wipeStore });
      }
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill("SIGKILL");
      rmSync(storeDir, { recursive: true, force: true });
    },
    log: () => output,
  };
}
