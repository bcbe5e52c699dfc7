// The README's library example is examples/client.ts, word for word, and it runs as written:
// a real Node process against a real server, its client tool reading a real file.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot, startServer, type TestServer } from "../support/server.ts";
import { script } from "./support.ts";

let server: TestServer;
let dir: string;
beforeAll(async () => {
  server = await startServer();
  dir = await mkdtemp(join(tmpdir(), "roz-example-"));
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

const example = readFileSync(join(repoRoot, "examples/client.ts"), "utf8");

describe("examples/client.ts", () => {
  it("is the README's example, word for word", () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    const block = /<!-- examples\/client\.ts -->\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(example);
    expect(example.trimEnd().split("\n").length).toBeLessThanOrEqual(15);
  });

  it("runs as written: streams the answer, runs its tool on a real file, prints the usage", async () => {
    const file = join(dir, "notes.txt");
    await writeFile(file, "milk, eggs");
    const prompt = script([[{ tool_call: { name: "read_file", arguments: { path: file } } }], [{ text: "The notes say: " }, { text: "milk, eggs" }]]);
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        ["examples/client.ts", prompt],
        { cwd: repoRoot, env: { ...process.env, ROZ_URL: server.url }, timeout: 20_000 },
        (_e, out, err) => resolve({ code: child.exitCode, stdout: out, stderr: err }),
      );
    });
    expect(stderr.replace(/.*ExperimentalWarning.*\n|.*--trace-warnings.*\n/g, "")).toBe("");
    expect(code).toBe(0);
    expect(stdout).toMatch(/^The notes say: milk, eggs\nend_turn: \d+ in, \d+ out, \$0\n$/);
    // The tool really read the file: the stored transcript has its result.
    const { items } = (await (await fetch(`${server.url}/v1/sessions?status=cancelled`)).json()) as { items: { id: string }[] };
    const { turns } = (await (await fetch(`${server.url}/v1/sessions/${items[0]?.id}/messages?format=turns`)).json()) as {
      turns: { tool_calls: { name: string; result: string }[] }[];
    };
    expect(turns[0]?.tool_calls).toMatchObject([{ name: "read_file", result: "milk, eggs" }]);
  });
});
