// @roz/client in a real browser (headless Chromium via playwright-core) on another origin: the
// package's browser entry (no Node module in the bundle) over Connect and gRPC-Web. A reload
// with a tool call open, the re-attach from the last seq, the call answered once, an approval,
// then a queued message and a steer while a turn runs.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../rest/support.ts";
import { haveChromium } from "../support/chromium.ts";
import { type CrossOriginHarness, startCrossOrigin } from "./fixture/serve.ts";

const maybe = haveChromium ? describe : describe.skip;

maybe("@roz/client in Chromium", () => {
  let h: CrossOriginHarness;
  beforeAll(async () => {
    h = await startCrossOrigin("client-page.ts", {
      ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "delete_*", policy: "require_confirmation", reason: "deletes files" }]),
    });
  }, 60_000);
  afterAll(() => h?.close());

  it("its browser bundle has no Node module in it", async () => {
    const bundle = await build({
      entryPoints: [fileURLToPath(new URL("./fixture/client-page.ts", import.meta.url))],
      bundle: true,
      write: false,
      platform: "browser",
      format: "esm",
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(bundle.metafile.inputs);
    expect(inputs.some((f) => f.includes("packages/client/src/browser.ts"))).toBe(true);
    expect(inputs.filter((f) => f.includes("connect-node") || f.includes("platform-node") || f.startsWith("node:"))).toEqual([]);
  });

  it.each(["connect", "grpc-web"])(
    "%s: a reload with a tool call open, re-attach from the last seq, the call answered once, an approval, a queue and a steer",
    (protocol) =>
      h.withPage(protocol, async (page) => {
        const errors: string[] = [];
        page.on("pageerror", (err) => errors.push(String(err)));
        await page.waitForFunction(() => ["reload me", "failed"].includes(window.rozClient?.phase), undefined, { timeout: 30_000 });
        expect(await page.evaluate(() => window.rozClient)).toMatchObject({ transport: protocol });
        await page.reload();
        await page.waitForFunction(() => ["done", "failed"].includes(window.rozClient?.phase), undefined, { timeout: 30_000 });
        const state = await page.evaluate(() => window.rozClient);
        expect(state.error, JSON.stringify(state)).toBeUndefined();
        expect(errors).toEqual([]);
        const result = state.result!;
        expect(result).toMatchObject({
          text: "Read hi, deleted a.txt.",
          stopReason: "end_turn",
          reads: 1,
          approvals: ["delete_file"],
          queued: "You said: queued hello",
        });
        expect(result.steeredInto).toBe("slow");
        // Across the reload: every seq once, in order, none missing (nothing else was attached to take a pong's number).
        expect(result.seqs).toEqual([...result.seqs].sort((a, b) => a - b));
        expect(new Set(result.seqs).size).toBe(result.seqs.length);

        const sessionId = await page.evaluate(() => sessionStorage.getItem("sessionId"));
        const turns = (await request(h.roz.url, "GET", `/v1/sessions/${sessionId}/messages?format=turns`)).json.turns;
        expect(turns[0].tool_calls.map((c: { name: string; permission: string; result: string }) => [c.name, c.permission, c.result])).toEqual([
          ["read_file", "allowed", "hi"],
          ["delete_file", "approved", "deleted"],
        ]);
      }),
    90_000,
  );
});
