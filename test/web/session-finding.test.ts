// The sessions screen finds sessions again (§13): the search box (full-text over titles and
// messages), renaming, archiving and the status and archive filters, in Chromium against a
// real server (open mode: no key).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { haveChromium, runOneTurnSession, screenshot, startConsole, type ConsoleHarness } from "./support/console.ts";

let h: ConsoleHarness;
let page: Page;
let platypus = "";
let otter = "";

beforeAll(async () => {
  if (!haveChromium) return;
  h = await startConsole();
  platypus = await runOneTurnSession(h.server, "a question about the platypus");
  otter = await runOneTurnSession(h.server, "a question about otters");
  ({ page } = await h.open("#/sessions"));
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const row = (id: string) => page.locator(`[data-session="${id}"]`);
const rest = async (id: string) => (await (await fetch(`${h.server.url}/v1/sessions/${id}`)).json()) as { title?: string; archived: boolean };

describe.skipIf(!haveChromium)("finding sessions in the console", () => {
  it("the search box shows only the sessions whose messages hold the words", async () => {
    await row(platypus).waitFor();
    await row(otter).waitFor();
    await page.getByLabel("Search sessions").fill("platypus");
    await page.getByLabel("Search sessions").press("Enter");
    await row(otter).waitFor({ state: "detached" });
    expect(await row(platypus).count()).toBe(1);
    await page.getByLabel("Search sessions").fill("kangaroo");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByText("No sessions match.").waitFor();
    await page.getByLabel("Search sessions").fill("");
    await page.getByLabel("Search sessions").press("Enter");
    await row(otter).waitFor();
  });

  it("renames a session in place, and the new title is searchable", async () => {
    await page.getByRole("button", { name: `Rename session ${platypus.slice(0, 8)}` }).click();
    const input = page.getByLabel(`Title of session ${platypus.slice(0, 8)}`);
    await input.fill("Monotreme research");
    await input.press("Enter");
    await row(platypus).getByText("Monotreme research").waitFor();
    expect((await rest(platypus)).title).toBe("Monotreme research");
    await page.getByLabel("Search sessions").fill("monotreme");
    await page.getByLabel("Search sessions").press("Enter");
    await row(otter).waitFor({ state: "detached" });
    await row(platypus).waitFor();
    await screenshot(page, "sessions-search");
    await page.getByLabel("Search sessions").fill("");
    await page.getByLabel("Search sessions").press("Enter");
    await row(otter).waitFor();
  });

  it("archives a session (hidden from the default list) and filters by archive and status", async () => {
    await page.getByRole("button", { name: `Archive session ${otter.slice(0, 8)}` }).click();
    await row(otter).waitFor({ state: "detached" });
    expect((await rest(otter)).archived).toBe(true);
    await page.getByLabel("Archived").selectOption("true");
    await row(otter).waitFor();
    expect(await row(platypus).count()).toBe(0);
    await page.getByRole("button", { name: `Unarchive session ${otter.slice(0, 8)}` }).click();
    await row(otter).waitFor({ state: "detached" });
    expect((await rest(otter)).archived).toBe(false);
    await page.getByLabel("Archived").selectOption("any");
    await row(otter).waitFor();
    await row(platypus).waitFor();
    await page.getByLabel("Status").selectOption("active");
    await page.getByText("No sessions match.").waitFor();
    await page.getByLabel("Status").selectOption("completed");
    await row(platypus).waitFor();
  });

  it("made no request to another origin", () => {
    expect(h.foreignRequests).toEqual([]);
  });
});
