// Typing while the agent works, from a real browser (headless Chromium via playwright-core) on
// another origin over AttachSession + SendToSession (Connect and gRPC-Web): a queued message
// and a steered one sent while a slow turn streams.
import type { Server } from "node:http";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveChromium, launchChromium } from "../support/chromium.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { serveFixture } from "./fixture/serve.ts";

const maybe = haveChromium ? describe : describe.skip;

maybe("a browser queues and steers over AttachSession + SendToSession", () => {
  let fixture: { server: Server; origin: string };
  let roz: TestServer;
  let browser: Browser;
  beforeAll(async () => {
    fixture = await serveFixture("conversation-page.ts");
    roz = await startServer({ ROZ_CORS_ORIGINS: fixture.origin, ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await roz?.close();
    fixture?.server.close();
  });

  it.each(["connect", "grpc-web"])(
    "%s: the steer joins the running turn and is answered in it; the queued message runs next as its own turn",
    async (protocol) => {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        await page.goto(`${fixture.origin}/?server=${encodeURIComponent(roz.url)}&protocol=${protocol}`);
        await page.waitForFunction(() => ["done", "failed"].includes(window.rozConversation?.phase), undefined, { timeout: 30_000 });
        const seen = await page.evaluate(() => window.rozConversation);
        expect(seen.error, JSON.stringify(seen)).toBeUndefined();
        expect(seen.errors).toEqual([]);
        expect(seen.updates).toEqual(["first STARTED", "queued QUEUED 1", "steered STEERED in first", "queued STARTED"]);
        expect(seen.turns).toEqual(["first end_turn", "queued end_turn"]);
        // The scripted model echoes the last user message: the steer, answered inside the first turn.
        expect(seen.text).toBe("Working on it.You said: steer helloYou said: queued hello");
      } finally {
        await context.close();
      }
    },
    60_000,
  );
});
