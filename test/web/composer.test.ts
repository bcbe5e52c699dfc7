// The console's message box while a turn runs: Queue, Steer and Interrupt instead of a
// disabled Send; a second tab sees what the first one typed, with its state.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveChromium, screenshot, script, startConsole, type ConsoleHarness } from "./support/console.ts";

let h: ConsoleHarness;

beforeAll(async () => {
  if (!haveChromium) return;
  h = await startConsole();
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const slow = (first: string, last: string, delayMs: number) => script([[{ text: first }, { delay_ms: delayMs }, { text: last }]]);

async function start(page: Page, message: string): Promise<string> {
  await page.goto(`${h.server.url}/#/new`);
  await page.getByLabel("Message").fill(message);
  await page.getByRole("button", { name: "Start" }).click();
  await page.waitForURL(/#\/sessions\/[0-9a-f-]{36}$/);
  return decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
}

async function type(page: Page, text: string, button: "Queue" | "Steer" | "Interrupt"): Promise<void> {
  await page.getByLabel("Message").fill(text);
  await page.getByRole("button", { name: button }).click();
}

const answers = (page: Page) => page.locator(".msg.assistant .text").allTextContents();

describe.skipIf(!haveChromium)("typing while the agent works", () => {
  it("queues and steers while a turn runs; the other tab sees both; the queued one runs as its own turn", async () => {
    const { page: a } = await h.open();
    const id = await start(a, slow("Working ", " done.", 8000));
    await a.locator(".msg.assistant .text", { hasText: "Working" }).waitFor();
    const { page: b } = await h.open(`#/sessions/${id}`);
    await b.locator(".msg.assistant .text", { hasText: "Working" }).waitFor();
    expect(await a.getByRole("button", { name: "Send" }).count()).toBe(0);
    await type(a, "queued words", "Queue");
    await a.locator(".msg.user[data-status='queued']", { hasText: "queued words" }).waitFor();
    await b.locator(".msg.user[data-status='queued'] .input-status", { hasText: "queued #1" }).waitFor();
    await type(a, "steer words", "Steer");
    await screenshot(a, "composer-queued");
    // The steer is answered inside the running turn; then the queued message starts its own.
    for (const page of [a, b]) {
      await page.locator(".msg.user[data-status='steered']", { hasText: "steer words" }).waitFor();
      await page.locator(".msg.assistant .text", { hasText: "You said: queued words" }).waitFor();
      await page.getByRole("button", { name: "Send" }).waitFor();
      expect(await answers(page)).toEqual(["Working  done.", "You said: steer words", "You said: queued words"]);
      // The other tab learned the queued message's text when it started.
      await page.locator(".msg.user:not([data-status])", { hasText: "queued words" }).waitFor();
    }
  });

  it("Interrupt cancels the running turn and runs the message at once", async () => {
    const { page } = await h.open();
    await start(page, slow("never ", "finished", 60_000));
    await page.locator(".msg.assistant .text", { hasText: "never" }).waitFor();
    await type(page, "do this instead", "Interrupt");
    await page.locator(".turn-end[data-stop='cancelled']").waitFor();
    await page.locator(".msg.assistant .text", { hasText: "You said: do this instead" }).waitFor();
    await page.locator(".turn-end[data-stop='end_turn']").waitFor();
  });
});

describe.skipIf(!haveChromium)("forking and rolling back from the console", () => {
  it("rolls back the last turn (the agent no longer sees it) and forks from an earlier turn into a new live session", async () => {
    const { page } = await h.open();
    const id = await start(page, "first question");
    await page.locator(".msg.assistant .text", { hasText: "You said: first question" }).waitFor();
    await page.getByLabel("Message").fill("second question");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".msg.assistant .text", { hasText: "You said: second question" }).waitFor();
    await page.getByRole("button", { name: "Send" }).waitFor();

    await page.getByRole("button", { name: "Roll back last turn" }).click();
    await page.locator(".notice", { hasText: "rolled back 1 turn" }).waitFor();
    const stored = (await (await fetch(`${h.server.url}/v1/sessions/${id}/messages?format=turns`)).json()) as {
      turns: { turn: number; rolled_back?: boolean }[];
    };
    expect(stored.turns.map((t) => [t.turn, t.rolled_back ?? false])).toEqual([
      [1, false],
      [2, true],
    ]);

    // Fork from the first turn: the new session holds it, and goes on live.
    await page.locator(".turn-end").first().getByRole("button", { name: "Fork from here" }).click();
    await page.waitForURL((url) => /#\/sessions\/[0-9a-f-]{36}$/.test(url.hash) && !url.hash.includes(id));
    const forkId = decodeURIComponent(new URL(page.url()).hash.split("/")[2] ?? "");
    await page.locator(".msg.assistant .text", { hasText: "You said: first question" }).waitFor();
    await page.locator("[data-link='live']").waitFor({ timeout: 3000 });
    await page.getByLabel("Message").fill("in the fork");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".msg.assistant .text", { hasText: "You said: in the fork" }).waitFor();
    const fork = (await (await fetch(`${h.server.url}/v1/sessions/${forkId}/messages?format=turns`)).json()) as {
      turns: { turn: number; forked_from?: { session_id: string; turn: number } }[];
    };
    expect(fork.turns.map((t) => [t.turn, t.forked_from?.session_id ?? null])).toEqual([
      [1, id],
      [2, null],
    ]);
    await screenshot(page, "fork");
  });
});
