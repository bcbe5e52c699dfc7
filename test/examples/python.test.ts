// The Python example (examples/python/session.py) as a reader runs it: grpcio with stubs
// generated from proto/, against a real server with keys on; one client tool whose approval
// is granted, then denied. Without a python3 that has grpcio and grpcio-tools it skips and
// says so, except in CI (.ci/run installs Debian's), where it must run.
import { execFile, execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot, type TestServer } from "../support/server.ts";
import { client, makeKey, startAuthServer, type TestKey } from "../rest/support.ts";

/** The first python3 that imports grpc and grpc_tools (Debian's packages live under /usr/bin/python3). */
const python = ["python3", "/usr/bin/python3"].find((candidate) => {
  try {
    execFileSync(candidate, ["-c", "import grpc, grpc_tools"], { stdio: "ignore", timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
});
const MISSING = "no python3 with grpcio and grpcio-tools (apt-get install python3-grpcio python3-grpc-tools)";
if (python === undefined && process.env["CI"] === undefined) console.log(`test/examples/python.test.ts skipped: ${MISSING}`);

let server: TestServer;
let key: TestKey;

beforeAll(async () => {
  server = await startAuthServer();
  key = await makeKey(server, "acme");
});
afterAll(async () => {
  await server?.close();
});

/** Runs the example with the server's URL and key; resolves with its exit code and output. */
function runExample(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      python ?? "python3",
      ["examples/python/session.py", ...args],
      { cwd: repoRoot, env: { ...process.env, ROZ_URL: server.url, ROZ_KEY: key.secret }, timeout: 60_000, encoding: "utf8" },
      (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

/** The one tool call of the session's only turn, as REST reports it. */
async function storedCall(sessionId: string) {
  const reply = await client(server, key.secret).get(`/v1/sessions/${sessionId}/messages?format=turns`);
  expect(reply.status).toBe(200);
  return reply.json.turns[0].tool_calls[0] as { name: string; permission: string; success?: boolean; result?: string };
}

const sessionIdOf = (stdout: string): string => /^session ([0-9a-f-]{36}) started on scripted\/default$/m.exec(stdout)?.[1] ?? "";

describe.skipIf(python === undefined && process.env["CI"] === undefined)("examples/python/session.py", () => {
  it("approves the tool call, runs the tool and prints the answer; the session completes", async () => {
    const run = await runExample();
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.split("\n");
    expect(lines).toContain('approval asked: read_file({"path": "README.md"}), reads a file on your machine: approved');
    expect(lines).toContain(`tool read_file({"path": "README.md"}) -> '# roz'`);
    expect(lines).toContain("The file is read.");
    expect(run.stdout).toMatch(/^turn complete: end_turn, \d+ in \/ \d+ out tokens$/m);
    const id = sessionIdOf(run.stdout);
    expect(await storedCall(id)).toMatchObject({ name: "read_file", permission: "approved", success: true, result: "# roz" });
    expect((await client(server, key.secret).get(`/v1/sessions/${id}`)).json.status).toBe("completed");
  });

  it("with --deny, the tool never runs and the scripted model answers the denial", async () => {
    const run = await runExample("--deny");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("reads a file on your machine: denied");
    expect(run.stdout).not.toContain("tool read_file");
    expect(run.stdout.split("\n")).toContain("I may not read the file.");
    expect(await storedCall(sessionIdOf(run.stdout))).toMatchObject({ name: "read_file", permission: "denied" });
  });
});
