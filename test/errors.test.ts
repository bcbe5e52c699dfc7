import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { httpStatusOfReason, type ReasonEntry, reasons, type Reason, RozError } from "../src/errors/index.ts";
import { sessionErrorOf } from "../src/session/index.ts";

/** The README lists every error reason; this keeps the list and the registry in step. */
describe("error registry", () => {
  it("the README's reason table matches src/errors/registry.ts", () => {
    const readme = readFileSync(resolve(import.meta.dirname, "../README.md"), "utf8");
    const section = /<!-- reasons:start -->\n([\s\S]*?)<!-- reasons:end -->/.exec(readme)?.[1] ?? "";
    const listed = [...section.matchAll(/^\| `([a-z_]+)` \| `([a-z_]+)` \| (\d+) \| (yes|no) \| (fixed|per cause|—) \|/gm)].map((m) => ({
      reason: m[1],
      code: m[2],
      status: Number(m[3]),
      retryable: m[4] === "yes",
      inBand: m[5] === "—" ? undefined : m[5]?.replace(" ", "_"),
    }));
    const registry = Object.entries(reasons).map(([reason, e]) => ({
      reason,
      code: e.code,
      status: httpStatusOfReason(reason as Reason),
      retryable: e.retryable,
      inBand: (e as ReasonEntry).inBand,
    }));
    expect(listed).toEqual(registry);
  });
});

/** The in-band SessionError fields come from the registry's `inBand` rule alone. */
describe("session error codes", () => {
  it("a fixed rule overrides the error's own flag; a per-cause rule keeps it", () => {
    expect(sessionErrorOf(new RozError("internal", "boom", { retryable: false }))).toEqual({ code: "internal", message: "boom", retryable: true });
    expect(sessionErrorOf(new RozError("no_session", undefined, { retryable: true })).retryable).toBe(false);
    expect(sessionErrorOf(new RozError("model_error", "400", { retryable: false })).retryable).toBe(false);
    expect(sessionErrorOf(new RozError("model_error", "429")).retryable).toBe(true);
    expect(sessionErrorOf(new RozError("agent_error", "tool crashed", { retryable: true })).retryable).toBe(true);
  });

  it("a reason that is not in-band is reported by its status code, else as internal", () => {
    // message_too_large is RESOURCE_EXHAUSTED: the in-band code of that name, retryable per its fixed rule.
    expect(sessionErrorOf(new RozError("message_too_large"))).toMatchObject({ code: "resource_exhausted", retryable: true });
    expect(sessionErrorOf(new RozError("malformed_message"))).toMatchObject({ code: "invalid_argument", retryable: false });
    expect(sessionErrorOf(new RozError("shutting_down"))).toMatchObject({ code: "unavailable", retryable: true });
  });

  it("every in-band code is its own reason's name, so a client can match on either", () => {
    const inBand = Object.entries(reasons)
      .filter(([, e]) => (e as ReasonEntry).inBand !== undefined)
      .map(([r]) => r);
    expect(inBand).toEqual(expect.arrayContaining(["no_session", "model_error", "agent_error", "permission_denied", "internal"]));
    for (const reason of inBand) expect(sessionErrorOf(new RozError(reason as Reason)).code).toBe(reason);
  });
});
