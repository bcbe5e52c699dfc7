// A real browser (headless Chromium via playwright-core) on ANOTHER origin runs a whole
// session with @connectrpc/connect-web (Connect and gRPC-Web): a client-side tool, a reload
// in the middle (re-attaching from the last seq kept in sessionStorage), and an approval.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../rest/support.ts";
import { haveChromium } from "../support/chromium.ts";
import { type CrossOriginHarness, startCrossOrigin } from "./fixture/serve.ts";

const maybe = haveChromium ? describe : describe.skip;

maybe("a browser on another origin holds a session over AttachSession + SendToSession", () => {
  let h: CrossOriginHarness;
  beforeAll(async () => {
    h = await startCrossOrigin("session-page.ts", {
      ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "delete_*", policy: "require_confirmation", reason: "deletes files" }]),
    });
  }, 60_000);
  afterAll(() => h?.close());

  it.each(["connect", "grpc-web"])(
    "%s: a tool call, a reload in the middle with re-attach from the last seq, an approval",
    (protocol) =>
      h.withPage(protocol, async (page) => {
        const errors: string[] = [];
        page.on("pageerror", (err) => errors.push(String(err)));
        await page.waitForFunction(() => window.rozState?.phase === "reload me" || window.rozState?.phase === "failed", undefined, { timeout: 30_000 });
        expect(await page.evaluate(() => window.rozState.error)).toBeUndefined();
        await page.reload();
        await page.waitForFunction(() => window.rozState?.phase === "done" || window.rozState?.phase === "failed", undefined, { timeout: 30_000 });
        const state = await page.evaluate(() => ({ state: window.rozState, result: window.rozResult }));
        expect(state.state.error, JSON.stringify(state)).toBeUndefined();
        expect(errors).toEqual([]);
        const result = state.result!;
        expect(result).toMatchObject({ text: "Read hi, deleted a.txt.", stopReason: "end_turn", resentToolCall: true });
        // Across the reload: every seq once, in order, none missing.
        expect(result.seqs).toEqual(Array.from({ length: result.seqs.length }, (_, i) => i + 1));

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
