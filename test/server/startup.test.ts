// The real `roz` process at startup: failures are one line naming the cause with exit code 2,
// unknown ROZ_* variables are pointed out, and the one listening line has the right scheme.
import { writeFile, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { runCli, spawnServer } from "../support/server.ts";
import { createSelfSignedCert } from "../support/tls.ts";

type Cleanup = TestContext["onTestFinished"];

/** The lines a process printed on stderr, blank ones dropped. */
const linesOf = (text: string): string[] => text.split("\n").filter((line) => line.trim() !== "");

/** Runs the server to its (failing) end and returns its one stderr line. */
async function failedStart(env: Record<string, string>): Promise<string> {
  const result = await runCli([], env);
  const lines = linesOf(result.stderr);
  expect(result.code, result.stderr).toBe(2);
  expect(lines, result.stderr).toHaveLength(1);
  expect(result.stdout).not.toContain("roz listening on");
  return lines[0] as string;
}

/** A plain TCP server on a free loopback port, closed when the test ends. */
const listeningOn = async (onTestFinished: Cleanup): Promise<Server> => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return server;
};

describe.concurrent("startup failures: one line naming the cause, exit code 2", () => {
  it("the port is in use", async ({ onTestFinished }) => {
    const { port } = (await listeningOn(onTestFinished)).address() as { port: number };
    const line = await failedStart({ ROZ_PORT: String(port) });
    expect(line).toBe(`roz: ROZ_PORT: port ${port} is already in use on 127.0.0.1 (another roz or another program listens there)`);
  });

  it("DATABASE_URL is not a PostgreSQL URL", async () => {
    expect(await failedStart({ DATABASE_URL: "base" })).toBe(
      "roz: DATABASE_URL: expected a postgres:// or postgresql:// URL, got a value without a URL scheme",
    );
    expect(await failedStart({ DATABASE_URL: "mysql://root:hunter2@db/app" })).toBe(
      'roz: DATABASE_URL: expected a postgres:// or postgresql:// URL, got a "mysql:" URL',
    );
  });

  it("DATABASE_URL names a host that does not resolve", async () => {
    const line = await failedStart({ DATABASE_URL: "postgres://roz:hunter2@no-such-db.invalid/roz" });
    expect(line).toMatch(/^roz: DATABASE_URL: cannot use PostgreSQL at no-such-db\.invalid:5432\/roz: getaddrinfo (ENOTFOUND|EAI_AGAIN) no-such-db\.invalid$/);
  });

  it("DATABASE_URL names a server that refuses connections, and the password is not printed", async ({ onTestFinished }) => {
    // A port that was just free: nothing listens there.
    const blocker = await listeningOn(onTestFinished);
    const { port } = blocker.address() as { port: number };
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
    const line = await failedStart({ DATABASE_URL: `postgresql://roz:hunter2@127.0.0.1:${port}/roz` });
    expect(line).toBe(`roz: DATABASE_URL: cannot use PostgreSQL at 127.0.0.1:${port}/roz: connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(line).not.toContain("hunter2");
  });

  it("the data dir cannot be written", async ({ onTestFinished }) => {
    // A regular file where a folder should be stops root too (file modes would not).
    const dir = await mkdtemp(join(tmpdir(), "roz-startup-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, "file"), "not a folder");
    const dataDir = join(dir, "file", "data");
    const line = await failedStart({ ROZ_DATA_DIR: dataDir });
    expect(line).toMatch(new RegExp(`^roz: ROZ_DATA_DIR: cannot write the embedded database in "${dataDir}": ENOTDIR`));
  });

  it("ROZ_HOST is not an address of this machine", async () => {
    // 192.0.2.1 is TEST-NET-1 (documentation only): never a local address.
    expect(await failedStart({ ROZ_HOST: "192.0.2.1", ROZ_AUTH: "disabled" })).toBe("roz: ROZ_HOST: 192.0.2.1 is not an address of this machine");
  });

  it("a TLS file cannot be read", async ({ onTestFinished }) => {
    const dir = await mkdtemp(join(tmpdir(), "roz-startup-"));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const missing = join(dir, "cert.pem");
    expect(await failedStart({ ROZ_TLS_CERT: missing, ROZ_TLS_KEY: missing })).toBe(
      `roz: ROZ_TLS_CERT: cannot read "${missing}": ENOENT: no such file or directory, open '${missing}'`,
    );
  });
});

describe("startup", () => {
  it("warns about an unknown ROZ_* variable, naming the closest setting", async ({ onTestFinished }) => {
    const server = await spawnServer({ ROZ_PROT: "9999", ROZ_SOMETHING_ELSE_ENTIRELY: "1", ROZ_KEY: "roz_sk_client_side" });
    onTestFinished(() => server.dispose());
    expect(linesOf(server.stderr())).toEqual([
      "roz: warning: unknown variable ROZ_PROT (did you mean ROZ_PORT?)",
      "roz: warning: unknown variable ROZ_SOMETHING_ELSE_ENTIRELY is ignored (see roz --help)",
    ]);
  });

  it("with TLS, logs one listening line and it says https://", async ({ onTestFinished }) => {
    const cert = await createSelfSignedCert();
    onTestFinished(() => cert.cleanup());
    const server = await spawnServer({ ROZ_TLS_CERT: cert.certPath, ROZ_TLS_KEY: cert.keyPath });
    onTestFinished(() => server.dispose());
    const listening = server.logLines().filter((line) => /listening/i.test(String(line["msg"])));
    expect(listening.map((line) => line["msg"])).toEqual([`roz listening on ${server.url}`]);
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });
});
