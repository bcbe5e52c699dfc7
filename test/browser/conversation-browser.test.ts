// Typing while the agent works, from a real browser (headless Chromium via playwright-core) on
// another origin over AttachSession + SendToSession (Connect and gRPC-Web): a queued message
// and a steered one sent while a slow turn streams.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveChromium } from "../support/chromium.ts";
import { type CrossOriginHarness, startCrossOrigin } from "./fixture/serve.ts";

const maybe = haveChromium ? describe : describe.skip;

maybe("a browser queues and steers over AttachSession + SendToSession", () => {
  let h: CrossOriginHarness;
  beforeAll(async () => {
    h = await startCrossOrigin("conversation-page.ts");
  }, 60_000);
  afterAll(() => h?.close());

  it.each(["connect", "grpc-web"])(
    "%s: the steer joins the running turn and is answered in it; the queued message runs next as its own turn",
    (protocol) =>
      h.withPage(protocol, async (page) => {
        await page.waitForFunction(() => ["done", "failed"].includes(window.rozConversation?.phase), undefined, { timeout: 30_000 });
        const seen = await page.evaluate(() => window.rozConversation);
        expect(seen.error, JSON.stringify(seen)).toBeUndefined();
        expect(seen.errors).toEqual([]);
        expect(seen.updates).toEqual(["first STARTED", "queued QUEUED 1", "steered STEERED in first", "queued STARTED"]);
        expect(seen.turns).toEqual(["first end_turn", "queued end_turn"]);
        // The scripted model echoes the last user message: the steer, answered inside the first turn.
        expect(seen.text).toBe("Working on it.You said: steer helloYou said: queued hello");
      }),
    60_000,
  );
});
