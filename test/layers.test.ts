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

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.(ts|js)$/.test(name) && !name.endsWith(".d.ts")) yield path;
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
