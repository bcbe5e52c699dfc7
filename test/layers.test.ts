// The DESIGN.md layer arrows, checked by dependency-cruiser (`npm run lint:layers`, also in
// CI): the real tree has no violation, and the rules catch imports DESIGN.md forbids.
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { repoRoot } from "./support/server.ts";

const run = promisify(execFile);
const depcruise = join(repoRoot, "node_modules", ".bin", "depcruise");
const config = join(repoRoot, ".dependency-cruiser.cjs");

interface Violation {
  from: string;
  to: string;
}

/** Runs depcruise with the project's rules in `cwd` and returns the violations (from → to). */
async function violations(cwd: string, paths: string[]): Promise<Violation[]> {
  const result = await run(depcruise, ["--config", config, "--output-type", "json", ...paths], { cwd, maxBuffer: 64 * 1024 * 1024 }).catch(
    // depcruise exits non-zero when it finds violations; the report is still on stdout.
    (err: { stdout?: string }) => ({ stdout: err.stdout ?? "" }),
  );
  const report = JSON.parse(result.stdout) as { summary: { violations: Violation[] } };
  return report.summary.violations.map(({ from, to }) => ({ from, to }));
}

describe("layers (dependency-cruiser)", () => {
  it("src/, routes/, web/ and packages/client follow the DESIGN.md arrows", async () => {
    expect(await violations(repoRoot, ["src", "routes", "web", "packages/client/src"])).toEqual([]);
  });

  it("refuses the imports DESIGN.md forbids and accepts the ones it draws", async () => {
    const dir = await mkdtemp(join(tmpdir(), "roz-layers-"));
    try {
      // One file per import, named after what it does: `<from>/<to>.ts` imports `<to>`.
      const imports: Record<string, string> = {
        "src/store/agent.ts": "../agent/index.ts", // the store must not import the agent to know what a turn is
        "src/store/models.ts": "../models/index.ts",
        "src/store/domain.ts": "../domain/index.ts",
        "src/session/rpc.ts": "../rpc/index.ts", // upwards
        "src/session/agent.ts": "../agent/index.ts",
        "src/agent/gen.ts": "../gen/agent_pb.js", // no protobuf type below src/rpc
        "src/agent/models.ts": "../models/index.ts",
        "src/agent/session.ts": "../session/index.ts",
        "src/models/agent.ts": "../agent/index.ts",
        "src/teams/agent.ts": "../agent/index.ts", // workers run the one agent loop
        "src/teams/bus.ts": "../bus/index.ts",
        "src/teams/session.ts": "../session/index.ts", // teams and sessions meet only through a port wired by the app
        "src/session/teams.ts": "../teams/index.ts",
        "src/agent/teams.ts": "../teams/index.ts",
        "src/domain/models.ts": "../models/index.ts", // the shared records are a leaf
        "src/rpc/session.ts": "../session/index.ts",
        "src/rpc/gen.ts": "../gen/agent_pb.js",
        "src/app/routes.ts": "../../routes/health.ts",
        "routes/app.ts": "../src/app/index.ts",
        "routes/agent.ts": "../src/agent/index.ts",
        "routes/gen.ts": "../src/gen/agent_pb.js", // routes are thin: protobuf JSON is src/rpc's
        "routes/rpc.ts": "../src/rpc/index.ts",
        "web/gen.ts": "../src/gen/agent_pb.js", // the console talks to the server through @roz/client only
        "web/client.ts": "../packages/client/src/index.ts",
        "web/session.ts": "../src/session/index.ts",
        "packages/client/src/gen.ts": "../../../src/gen/agent_pb.js", // the library stands alone: its own generated code
        "packages/client/src/session.ts": "../../../src/session/index.ts",
      };
      const targets = [
        "src/agent/index.ts",
        "src/teams/index.ts",
        "src/models/index.ts",
        "src/domain/index.ts",
        "src/rpc/index.ts",
        "src/session/index.ts",
        "src/bus/index.ts",
        "src/app/index.ts",
        "routes/health.ts",
        "packages/client/src/index.ts",
      ];
      for (const target of targets) await writeAt(dir, target, "export const x = 1;\n");
      await writeAt(dir, "src/gen/agent_pb.js", "export const x = 1;\n");
      for (const [file, target] of Object.entries(imports)) await writeAt(dir, file, `import { x } from "${target}";\nexport const y = x;\n`);
      await writeFile(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { allowJs: true, allowImportingTsExtensions: true } }));

      const found = (await violations(dir, ["src", "routes", "web", "packages"])).map((v) => v.from).sort();
      expect(found).toEqual(
        [
          "src/store/agent.ts",
          "src/store/models.ts",
          "src/session/rpc.ts",
          "src/agent/gen.ts",
          "src/agent/session.ts",
          "src/models/agent.ts",
          "src/teams/session.ts",
          "src/session/teams.ts",
          "src/agent/teams.ts",
          "src/domain/models.ts",
          "routes/gen.ts",
          "routes/app.ts", // nothing imports the composition root
          "routes/rpc.ts", // routes and rpc are siblings: the app hands routes what they need of rpc
          "web/gen.ts",
          "web/session.ts",
          "packages/client/src/gen.ts",
          "packages/client/src/session.ts",
        ].sort(),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("layer rule sets", () => {
  it("name only arrows the code uses: a folder's rule set is exactly what it imports", async () => {
    const { imports, pathOf } = createRequire(import.meta.url)(config).layers as { imports: Record<string, string[]>; pathOf: (folder: string) => string };
    const result = await run(depcruise, ["--config", config, "--output-type", "json", "src", "routes"], { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 });
    const report = JSON.parse(result.stdout) as { modules: { source: string; dependencies: { resolved: string }[] }[] };
    const folderOf = (path: string): string | undefined => Object.keys(imports).find((folder) => new RegExp(pathOf(folder)).test(path));
    const used: Record<string, Set<string>> = {};
    for (const module of report.modules) {
      const from = folderOf(module.source);
      if (from === undefined) continue;
      for (const { resolved } of module.dependencies) {
        const to = folderOf(resolved);
        if (to !== undefined && to !== from) (used[from] ??= new Set()).add(to);
      }
    }
    for (const [folder, targets] of Object.entries(imports)) expect([...(used[folder] ?? [])].sort(), folder).toEqual([...targets].sort());
  });

  it("refuses an import cycle, even of types only", async () => {
    const dir = await mkdtemp(join(tmpdir(), "roz-cycle-"));
    try {
      await writeAt(dir, "src/session/a.ts", 'import type { B } from "./b.ts";\nexport type A = { b?: B };\n');
      await writeAt(dir, "src/session/b.ts", 'import type { A } from "./a.ts";\nexport type B = { a?: A };\n');
      await writeFile(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true } }));
      // depcruise reports a cycle once, at the module it met first.
      expect((await violations(dir, ["src"])).map((v) => `${v.from} → ${v.to}`)).toEqual([
        expect.stringMatching(/^src\/session\/[ab]\.ts → src\/session\/[ab]\.ts$/),
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

async function writeAt(root: string, file: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, file)), { recursive: true });
  await writeFile(join(root, file), text);
}
