// A real browser (headless Chromium via playwright-core) on ANOTHER origin runs a whole
// session with @connectrpc/connect-web (Connect and gRPC-Web): a client-side tool, a reload
// in the middle (re-attaching from the last seq kept in sessionStorage), and an approval.
import type { Server } from "node:http";
import type { Browser } from "playwright-core";
import { haveChromium, launchChromium } from "../support/chromium.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../rest/support.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { serveFixture } from "./fixture/serve.ts";

const maybe = haveChromium ? describe : describe.skip;

maybe("a browser on another origin holds a session over AttachSession + SendToSession", () => {
  let fixture: { server: Server; origin: string };
  let roz: TestServer;
  let browser: Browser;
  beforeAll(async () => {
    fixture = await serveFixture("session-page.ts");
    roz = await startServer({
      ROZ_CORS_ORIGINS: fixture.origin,
      ROZ_KEEPALIVE_INTERVAL_MS: "3600000",
      ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "delete_*", policy: "require_confirmation", reason: "deletes files" }]),
    });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await roz?.close();
    fixture?.server.close();
  });

  it.each(["connect", "grpc-web"])(
    "%s: a tool call, a reload in the middle with re-attach from the last seq, an approval",
    async (protocol) => {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        const errors: string[] = [];
        page.on("pageerror", (err) => errors.push(String(err)));
        await page.goto(`${fixture.origin}/?server=${encodeURIComponent(roz.url)}&protocol=${protocol}`);
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
        const turns = (await request(roz.url, "GET", `/v1/sessions/${sessionId}/messages?format=turns`)).json.turns;
        expect(turns[0].tool_calls.map((c: { name: string; permission: string; result: string }) => [c.name, c.permission, c.result])).toEqual([
          ["read_file", "allowed", "hi"],
          ["delete_file", "approved", "deleted"],
        ]);
      } finally {
        await context.close();
      }
    },
    90_000,
  );
});
