// The real `roz` command: --help, configuration errors, and graceful shutdown with open streams.
import * as net from "node:net";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { settings } from "../../src/app/config.ts";
import { commands } from "../../src/cli/index.ts";
import { createGrpcJsClient, req, type RozGrpcJsClient } from "../support/grpc-js-client.ts";
import { runCli, spawnServer, type SpawnedServer } from "../support/server.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Resolves with the connect error code (e.g. ECONNREFUSED), or "connected". */
const tryConnect = (port: number): Promise<string> =>
  new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
  });

async function spawnWithClient(env: Record<string, string>): Promise<{ server: SpawnedServer; client: RozGrpcJsClient }> {
  const server = await spawnServer(env);
  cleanups.push(() => server.dispose());
  const client = createGrpcJsClient(server.url);
  cleanups.push(() => client.close());
  return { server, client };
}

/** The process's output, for assertion messages. */
const output = (server: SpawnedServer): string => `stdout:\n${server.stdout()}\nstderr:\n${server.stderr()}`;

/** Waits until the server logged that it is shutting down (it no longer listens after that). */
const shuttingDown = (server: SpawnedServer) => expect.poll(() => server.logLines().some((l) => l["msg"] === "shutting down"), { timeout: 10_000 }).toBe(true);

describe.concurrent("roz --help", () => {
  it("prints every variable with its default and exits 0", async () => {
    const result = await runCli(["--help"]);
    expect(result.code).toBe(0);
    for (const setting of Object.values(settings)) {
      const line = result.stdout.split("\n").find((l) => l.trim().startsWith(`${setting.env} `));
      expect(line, setting.env).toBeDefined();
      expect(line).toContain(`(default: ${setting.defaultText})`);
    }
  });

  it("lists every command with its arguments, and `roz keys --help` the keys commands only", async () => {
    const [all, keys] = await Promise.all([runCli(["--help"]), runCli(["keys", "--help"])]);
    expect(all.code).toBe(0);
    expect(commands.map((c) => c.name)).toEqual(expect.arrayContaining(["keys create", "keys list", "keys revoke", "healthcheck"]));
    for (const c of commands) expect(all.stdout.split("\n"), c.name).toContain(`  roz ${`${c.name} ${c.args}`.trim()}`);
    expect(keys.code).toBe(0);
    expect(keys.stdout).toContain("  roz keys revoke --tenant NAME KEY_ID\n");
    expect(keys.stdout).toContain("  roz keys list --tenant NAME\n");
    expect(keys.stdout).not.toContain("healthcheck");
  });
});

describe.concurrent("configuration errors", () => {
  it.each([
    ["ROZ_PORT", "abc"],
    ["ROZ_PORT", "70000"],
    ["ROZ_MAX_MESSAGE_BYTES", "12 parsecs"],
    ["ROZ_LOG_LEVEL", "loud"],
  ])("%s=%s exits non-zero naming the variable", async (name, value) => {
    const result = await runCli([], { [name]: value });
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr).toContain(name);
    expect(result.stdout).not.toContain("roz listening on");
  });

  it("ROZ_TLS_CERT without ROZ_TLS_KEY exits non-zero naming ROZ_TLS_KEY", async () => {
    const result = await runCli([], { ROZ_TLS_CERT: "/nonexistent.pem" });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("ROZ_TLS_KEY");
  });
});

describe("graceful shutdown (SIGTERM) of the real process", () => {
  it("logs the listening URL as a JSON line", async () => {
    const server = await spawnServer();
    cleanups.push(() => server.dispose());
    const line = server.logLines().find((l) => typeof l["url"] === "string");
    expect(line?.["msg"]).toBe(`roz listening on ${server.url}`);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await server.stop("SIGTERM"), output(server)).toEqual({ code: 0, signal: null });
  });

  /** Opens a started session, sends SIGTERM, and checks the port stops accepting. */
  async function startedThenTerminated(
    server: Awaited<ReturnType<typeof spawnWithClient>>["server"],
    client: Awaited<ReturnType<typeof spawnWithClient>>["client"],
  ) {
    const call = client.openSession();
    cleanups.push(() => call.cancel());
    call.send(req.start());
    expect((await call.next(10_000)).response).toBe("session_started");
    const sentAt = Date.now();
    server.child.kill("SIGTERM");
    await shuttingDown(server);
    expect(await tryConnect(server.port)).toBe("ECONNREFUSED");
    return { call, sentAt };
  }

  it("ends an idle open stream with UNAVAILABLE at once (only running turns get the grace), refuses new connections, exits 0, logs stopped", async () => {
    const grace = 20_000;
    const { server, client } = await spawnWithClient({ ROZ_SHUTDOWN_GRACE_MS: String(grace) });
    const { call, sentAt } = await startedThenTerminated(server, client);
    expect((await call.status).code).toBe(grpc.status.UNAVAILABLE);
    expect(await server.exited, output(server)).toEqual({ code: 0, signal: null });
    expect(Date.now() - sentAt).toBeLessThan(grace / 2);
    expect(server.logLines().at(-1)?.["msg"], output(server)).toBe("stopped");
  });

  /** A scripted turn that waits `ms` before answering "done". */
  const slowTurn = (ms: number) => req.userMessage(`script: ${JSON.stringify({ responses: [[{ delay_ms: ms }, { text: "done" }]] })}`);

  it("lets a running turn finish within the grace period, then ends the stream with UNAVAILABLE", async () => {
    const grace = 20_000;
    const { server, client } = await spawnWithClient({ ROZ_SHUTDOWN_GRACE_MS: String(grace) });
    const call = client.openSession();
    cleanups.push(() => call.cancel());
    call.send(req.start());
    expect((await call.next(10_000)).response).toBe("session_started");
    call.send(slowTurn(1500));
    await call.responses.nextMatching((r) => r.response === "activity_update", 10_000);
    const sentAt = Date.now();
    server.child.kill("SIGTERM");
    const done = await call.responses.nextMatching((r) => r.response === "turn_complete", 15_000);
    expect((done["turn_complete"] as { stop_reason: string }).stop_reason).toBe("end_turn");
    expect((await call.status).code).toBe(grpc.status.UNAVAILABLE);
    expect(await server.exited, output(server)).toEqual({ code: 0, signal: null });
    expect(Date.now() - sentAt).toBeLessThan(grace);
  });

  it("interrupts a turn still running when the grace period ends: SessionError{interrupted, retryable} then turn_complete{error}", async () => {
    const { server, client } = await spawnWithClient({ ROZ_SHUTDOWN_GRACE_MS: "500" });
    const call = client.openSession();
    cleanups.push(() => call.cancel());
    call.send(req.start());
    expect((await call.next(10_000)).response).toBe("session_started");
    call.send(slowTurn(60_000));
    await call.responses.nextMatching((r) => r.response === "activity_update", 10_000);
    server.child.kill("SIGTERM");
    const error = await call.responses.nextMatching((r) => r.response === "error", 15_000);
    expect(error.error).toMatchObject({ code: "interrupted", retryable: true });
    const done = await call.responses.nextMatching((r) => r.response === "turn_complete", 15_000);
    expect((done["turn_complete"] as { stop_reason: string }).stop_reason).toBe("error");
    expect((await call.status).code).toBe(grpc.status.UNAVAILABLE);
    expect(await server.exited, output(server)).toEqual({ code: 0, signal: null });
  });

  it("exits 0 on SIGTERM at once when nothing is open", async () => {
    const server = await spawnServer({ ROZ_SHUTDOWN_GRACE_MS: "20000" });
    cleanups.push(() => server.dispose());
    const sentAt = Date.now();
    expect(await server.stop("SIGTERM"), output(server)).toEqual({ code: 0, signal: null });
    expect(Date.now() - sentAt).toBeLessThan(10_000);
  });
});
