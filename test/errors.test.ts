import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { httpStatusOfReason, reasons, type Reason } from "../src/errors/index.ts";

/** The README lists every error reason; this keeps the list and the registry in step. */
describe("error registry", () => {
  it("the README's reason table matches src/errors/registry.ts", () => {
    const readme = readFileSync(resolve(import.meta.dirname, "../README.md"), "utf8");
    const section = /<!-- reasons:start -->\n([\s\S]*?)<!-- reasons:end -->/.exec(readme)?.[1] ?? "";
    const listed = [...section.matchAll(/^\| `([a-z_]+)` \| `([a-z_]+)` \| (\d+) \| (yes|no) \|/gm)].map((m) => ({
      reason: m[1],
      code: m[2],
      status: Number(m[3]),
      retryable: m[4] === "yes",
    }));
    const registry = Object.entries(reasons).map(([reason, e]) => ({
      reason,
      code: e.code,
      status: httpStatusOfReason(reason as Reason),
      retryable: e.retryable,
    }));
    expect(listed).toEqual(registry);
  });
});
