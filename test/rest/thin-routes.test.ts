// Routes are thin (DESIGN.md): their types come from their schemas (no casts) and the
// `/v1` prefix is given once, where the routes are registered.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/server.ts";

const routesDir = join(repoRoot, "routes");
const sources = readdirSync(routesDir)
  .filter((f) => f.endsWith(".ts"))
  .map((file) => ({ file, text: readFileSync(join(routesDir, file), "utf8") }));

/** Lines matching `pattern`, as `file:line: text`. */
const linesMatching = (pattern: RegExp): string[] =>
  sources.flatMap(({ file, text }) => text.split("\n").flatMap((line, i) => (pattern.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])));

describe("routes/", () => {
  it("has routes to check", () => {
    expect(sources.map((s) => s.file)).toEqual(expect.arrayContaining(["environments.ts", "keys.ts", "sessions.ts"]));
  });

  it("casts nothing: params, query and body are typed by their schemas", () => {
    // `as const` makes a schema a type; any other cast would write a route's types twice.
    const casts: string[] = [];
    for (const { file, text } of sources) {
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node): void => {
        const isCast = (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) && node.type.getText(source) !== "const";
        if (isCast) casts.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${node.getText(source)}`);
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(casts).toEqual([]);
  });

  it("repeats no /v1 prefix in route paths", () => {
    expect(linesMatching(/"\/v1\//)).toEqual([]);
  });
});
