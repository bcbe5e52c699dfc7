// Big lists stay light: 1,000 sessions and a 10,000-message transcript are drawn as a few
// dozen rows, and scrolling to the end shows the last entries.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { haveChromium, screenshot, startConsole, type ConsoleHarness } from "./support/console.ts";

const SESSIONS = 1000;
/** Each stored turn is two messages (question and answer). */
const TURNS = 5000;

let h: ConsoleHarness;
let longSession = "";
beforeAll(async () => {
  if (!haveChromium) return;
  h = await startConsole();
  const store = h.server.app.store;
  // ROZ_AUTH=disabled: every caller is the `default` tenant.
  const tenant = await store.ensureTenant("default");
  const env = await store.getDefaultEnvironment(tenant.id);
  for (let i = 0; i < SESSIONS; i++) {
    const s = await store.createSession(tenant.id, { environmentId: env.id, model: `scripted/m${i}` });
    if (i === 0) longSession = s.id;
  }
  for (let n = 1; n <= TURNS; n++) {
    await store.appendTurn(tenant.id, longSession, {
      messageId: `m${n}`,
      userContent: `question ${n}`,
      userContext: [],
      mode: "react",
      assistantText: `answer ${n}`,
      assistantThinking: "",
      assistantThinkingBlocks: [],
      toolCalls: [],
      usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 5, cacheCreationTokens: 0 },
      costUsd: 0,
      stopReason: "end_turn",
      compactions: 0,
      startedAt: n,
      endedAt: n + 1,
    });
  }
  await store.updateSessionStatus(tenant.id, longSession, { status: "completed" });
}, 240_000);
afterAll(async () => {
  await h?.close();
});

/** How many rows the list has in the DOM, and how many items it stands for. */
const rowsOf = (page: Page, list: string) =>
  page.evaluate((selector) => {
    const el = document.querySelector(selector) as HTMLElement;
    return { drawn: el.querySelectorAll(".vrow").length, count: Number(el.dataset["count"]) };
  }, list);

/** Scrolls a list to its end and waits for two frames, so the rows there are drawn. */
const scrollToEnd = (page: Page, list: string) =>
  page.evaluate(async (selector) => {
    const el = document.querySelector(selector) as HTMLElement;
    for (let i = 0; i < 5; i++) {
      el.scrollTop = el.scrollHeight;
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    }
  }, list);

describe.skipIf(!haveChromium)("large lists", () => {
  it(`lists ${SESSIONS} sessions with a few dozen rows in the page`, async () => {
    const { page } = await h.open("#/sessions");
    await page.getByText(`${SESSIONS.toLocaleString("en-US")} sessions`).waitFor({ timeout: 30_000 });
    const rows = await rowsOf(page, ".vlist.sessions");
    expect(rows.count).toBe(SESSIONS);
    expect(rows.drawn).toBeLessThan(80);
    await scrollToEnd(page, ".vlist.sessions");
    // Newest first: the first session created is the last row.
    await page.locator(`[data-session="${longSession}"]`).waitFor();
    expect((await rowsOf(page, ".vlist.sessions")).drawn).toBeLessThan(80);
    // The page still answers promptly while a poll re-reads the 1,000 sessions.
    const t0 = Date.now();
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(r)));
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it(`shows a ${TURNS * 2}-message transcript, drawing only what is in view`, async () => {
    const { page } = await h.open(`#/sessions/${longSession}`);
    await page.getByText(`answer ${TURNS}`, { exact: true }).waitFor({ timeout: 30_000 });
    const rows = await rowsOf(page, ".vlist.timeline");
    expect(rows.count).toBe(TURNS * 3); // question, answer, turn line
    expect(rows.drawn).toBeLessThan(120);
    await page.evaluate(() => {
      (document.querySelector(".vlist.timeline") as HTMLElement).scrollTop = 0;
    });
    await page.getByText("question 1", { exact: true }).waitFor();
    await screenshot(page, "transcript-long");
  });

  it("made no request to any other origin", () => {
    expect(h.foreignRequests).toEqual([]);
  });
});
