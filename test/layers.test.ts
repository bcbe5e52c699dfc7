import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The layer arrows of DESIGN.md, checked on every relative import: a layer may import
 * itself and the layers listed for it. `errors` and `gen` are shared leaves.
 */
const allowed: Record<string, string[]> = {
  routes: ["app", "errors", "session", "store", "models", "agent", "gen", "auth", "rpc"],
  app: ["rpc", "session", "agent", "models", "store", "bus", "teams", "errors", "gen", "routes", "auth", "cli"],
  cli: ["app", "auth", "store", "errors"],
  auth: ["store", "errors", "session"],
  rpc: ["session", "agent", "models", "errors", "gen", "teams"],
  session: ["agent", "models", "errors"],
  agent: ["models", "errors"],
  models: ["errors"],
  teams: ["agent", "models", "store", "bus", "errors"],
  store: ["agent", "models", "errors"],
  bus: ["errors"],
  errors: [],
  gen: [],
};

const root = resolve(import.meta.dirname, "..");
const layerOf = (file: string): string => {
  const rel = relative(root, file).split("/");
  return rel[0] === "src" ? (rel[1] ?? "") : (rel[0] ?? "");
};

function* sources(dir: string, pattern = /\.(ts|js)$/): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path, pattern);
    else if (pattern.test(name) && !name.endsWith(".d.ts")) yield path;
  }
}

describe("layers", () => {
  it("every relative import follows the DESIGN.md arrows", () => {
    const violations: string[] = [];
    for (const file of [...sources(join(root, "src")), ...sources(join(root, "routes"))]) {
      const from = layerOf(file);
      if (from === "gen" || from === "main.ts") continue;
      for (const m of readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*"(\.[^"]+)"/g)) {
        const to = layerOf(resolve(file, "..", m[1] as string));
        if (to !== from && !(allowed[from] ?? []).includes(to)) violations.push(`${relative(root, file)} → ${m[1]}`);
      }
    }
    expect(violations).toEqual([]);
  });
});

describe("the web console's layer", () => {
  /** What web/ may import besides its own modules and src/gen: the browser libraries it is built on. */
  const webPackages = ["preact", "preact/hooks", "preact/jsx-runtime", "@connectrpc/connect", "@connectrpc/connect-web", "@bufbuild/protobuf"];

  it("web/src imports only its own modules, generated code and its browser libraries; nothing imports web/src", () => {
    const violations: string[] = [];
    const webSrc = join(root, "web", "src");
    for (const file of sources(webSrc, /\.(ts|tsx)$/)) {
      for (const m of readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
        const spec = m[1] as string;
        if (!spec.startsWith(".")) {
          if (!webPackages.includes(spec)) violations.push(`${relative(root, file)} → ${spec}`);
          continue;
        }
        const target = relative(root, resolve(file, "..", spec));
        if (!target.startsWith("web/src/") && !target.startsWith("src/gen/")) violations.push(`${relative(root, file)} → ${spec}`);
      }
    }
    for (const file of [...sources(join(root, "src")), ...sources(join(root, "routes"))]) {
      if (/["']\.[^"']*\/web\/src\//.test(readFileSync(file, "utf8"))) violations.push(`${relative(root, file)} imports web/src`);
    }
    expect(violations).toEqual([]);
  });
});
