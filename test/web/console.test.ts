// The console against a real server with auth on: open mode on loopback, the first key made
// in the console ends it, sign in, sessions and transcripts from REST, environments with a
// validation error, usage, key revocation signing the console out — and no request leaves
// the server's origin.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { haveChromium, runOneTurnSession, screenshot, script, startConsole, type ConsoleHarness } from "./support/console.ts";

/** Pixels between the end of one labelled value's text and the start of the next in a row. */
function gapBetween(page: Page, row: string, left: string, right: string): Promise<number> {
  return page.locator(row).evaluate(
    (el, [a, b]) => {
      const textBox = (label: string) => {
        const range = document.createRange();
        range.selectNodeContents(el.querySelector(`[data-label="${label}"]`) as Node);
        return range.getBoundingClientRect();
      };
      return textBox(b as string).left - textBox(a as string).right;
    },
    [left, right],
  );
}

let h: ConsoleHarness;
let page: Page;
/** The key the console signs in with (made in the console while the server was open). */
let adminKey = "";
let firstSession = "";
/** Where the providers file pricing the scripted models lives (the usage screen shows their cost). */
let dir = "";

beforeAll(async () => {
  if (!haveChromium) return;
  dir = await mkdtemp(join(tmpdir(), "roz-console-prices-"));
  const providers = join(dir, "providers.json");
  await writeFile(providers, JSON.stringify({ providers: { scripted: { prices: { "*": { input: 1, output: 2, cache_read: 0.25 } } } } }));
  h = await startConsole({ ROZ_AUTH: "required", ROZ_PROVIDERS_FILE: providers });
  ({ page } = await h.open());
}, 60_000);
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const auth = () => ({ authorization: `Bearer ${adminKey}` });

describe.skipIf(!haveChromium)("the console", () => {
  it("needs no key on a loopback server without keys (open mode), and is signed out once the first key exists", async () => {
    await page.getByText("open mode").waitFor();
    await page.getByRole("link", { name: "Keys" }).click();
    await page.getByLabel("Name").fill("console admin");
    await page.getByRole("button", { name: "Create key" }).click();
    // The server left open mode at once: the console's next call is refused and it asks for
    // a key, still showing the new secret (once).
    await page.getByRole("heading", { name: "Sign in to roz" }).waitFor();
    adminKey = (await page.locator("[data-secret]").textContent())?.trim() ?? "";
    expect(adminKey).toMatch(/^roz_sk_/);
    await screenshot(page, "sign-in");
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.locator("[data-secret]").count()).toBe(0);
  });

  it("signs in with a key (kept in sessionStorage) and lists the tenant's sessions, live-updating", async () => {
    firstSession = await runOneTurnSession(h.server, "hello console", auth());
    await page.getByLabel("API key").fill("roz_sk_wrong");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").waitFor();
    await page.getByLabel("API key").fill(adminKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    // Back where it was signed out (the keys page), then to the list.
    await page.getByRole("heading", { name: "API keys" }).waitFor();
    await page.getByRole("link", { name: "Sessions" }).click();
    expect(await page.evaluate(() => sessionStorage.getItem("roz.apiKey"))).toBe(adminKey);
    const row = page.locator(`[data-session="${firstSession}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain("scripted/default");
    expect(await row.textContent()).toContain("completed");
    // A session started elsewhere shows up without a reload.
    const second = await runOneTurnSession(
      h.server,
      script([[{ text: "cached answer" }, { usage: { input_tokens: 900, output_tokens: 40, cache_read_tokens: 600 } }]]),
      auth(),
    );
    await page.locator(`[data-session="${second}"]`).waitFor();
    await page.getByText("2 sessions").waitFor();
    await screenshot(page, "sessions");
    // Wide: "attached" and "last activity" stand apart, not as one run of text ("0 7 s ago").
    expect(await gapBetween(page, `[data-session="${second}"]`, "attached", "last activity")).toBeGreaterThan(24);

    // A phone: the list fits the width, the column heads give way to labelled values on each card.
    await page.setViewportSize({ width: 390, height: 800 });
    try {
      await page.locator(".srow-wrap.head").waitFor({ state: "hidden" });
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      const card = page.locator(`[data-session="${second}"]`);
      const labels = await card.evaluate((row) =>
        Array.from(row.querySelectorAll("[data-label]")).map((cell) => ({
          label: getComputedStyle(cell, "::before").content,
          fits: cell.getBoundingClientRect().right <= 390,
          shown: (cell as HTMLElement).offsetParent !== null,
        })),
      );
      expect(labels.map((l) => l.label)).toEqual(['"turns "', '"tokens "', '"attached "', '"last activity "']);
      expect(labels.every((l) => l.fits && l.shown)).toBe(true);
      await screenshot(page, "sessions-phone");
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
  });

  it("opens a session's transcript from REST", async () => {
    await page.locator(`[data-session="${firstSession}"]`).click();
    await page.getByText("You said: hello console").waitFor();
    await page.getByText("hello console", { exact: true }).waitFor();
    await page.locator(".turn-end[data-stop='end_turn']").waitFor();
    await screenshot(page, "transcript");
  });

  it("creates and edits an environment, with the REST validation error shown next to the field", async () => {
    await page.getByRole("link", { name: "Environments" }).click();
    await page.getByRole("button", { name: "New environment" }).click();
    const form = page.getByRole("form", { name: "New environment" });
    await form.getByLabel("Name", { exact: true }).fill("lab");
    await form.getByRole("button", { name: "Add rule" }).click();
    await form.getByLabel("Tool pattern").fill("fetch_*");
    await form.getByLabel("Reason").fill("network access needs a human");
    await form.getByRole("button", { name: "Save" }).click();
    const row = page.locator("[data-env='lab']");
    await row.waitFor();
    expect(await row.textContent()).toContain("fetch_*: require_confirmation");

    await page.getByRole("button", { name: "Edit lab" }).click();
    const edit = page.getByRole("form", { name: "Edit lab" });
    await edit.getByLabel("Tool pattern").fill("[broken");
    await edit.getByRole("button", { name: "Save" }).click();
    const error = edit.locator("[data-field='permissions.0.tool_pattern'].field-error");
    await error.waitFor();
    expect(await error.textContent()).toContain("invalid glob");
    // The message is tied to its input, next to it.
    expect(await edit.getByLabel("Tool pattern").getAttribute("aria-describedby")).toBe("err-permissions.0.tool_pattern");
    await screenshot(page, "environments-error");

    await edit.getByLabel("Name", { exact: true }).fill("");
    await edit.getByLabel("Tool pattern").fill("fetch_*");
    await edit.getByRole("button", { name: "Save" }).click();
    await edit.locator("[data-field='name'].field-error").waitFor();

    await edit.getByLabel("Name", { exact: true }).fill("lab two");
    await edit.getByLabel("Default model (provider/model)").fill("scripted/default");
    await edit.getByRole("button", { name: "Save" }).click();
    await page.locator("[data-env='lab two']").waitFor();
    await screenshot(page, "environments");
  });

  it("charts tokens per day and per session, cache hits apart", async () => {
    await page.getByRole("link", { name: "Usage" }).click();
    await page.getByRole("img", { name: /Tokens per day/ }).waitFor();
    expect(await page.locator("[data-total='cache_read']").textContent()).toContain("600");
    // The scripted models are priced here: the total cost is a fraction of a cent, not $0.
    expect(await page.locator("[data-total='cost']").textContent()).toMatch(/^\$0\.00[0-9]*[1-9]/);
    expect(await page.locator("[data-budget='tokens']").textContent()).toContain("(no limit)");
    const perSession = page.getByRole("img", { name: /Tokens per session/ });
    expect(await perSession.locator("g[data-bar]").count()).toBe(2);
    expect(await perSession.locator("rect.series-cache_read").count()).toBe(2);
    await screenshot(page, "usage");
  });

  it("offers the new-session form with the tenant's environments, the default once", async () => {
    await page.getByRole("link", { name: "New session" }).first().click();
    await page.getByLabel("Environment").locator("option", { hasText: "lab two" }).waitFor({ state: "attached" });
    // The sessions so far made the tenant's default: it is the empty choice, offered once.
    const options = await page
      .getByLabel("Environment")
      .locator("option")
      .evaluateAll((os) => os.map((o) => [(o as HTMLOptionElement).value, o.textContent]));
    expect(options.filter(([value]) => value === "")).toEqual([["", "default"]]);
    expect(options.map(([, text]) => text)).toEqual(["default", "lab two"]);
    await page.getByLabel("Message").fill("Which tools do you have?");
    await screenshot(page, "new-session");
    await page.getByRole("link", { name: "Teams" }).click();
    await page.getByLabel("Task id").waitFor();
    await screenshot(page, "teams-empty");
  });

  it("deletes an environment only after a confirmation", async () => {
    await page.getByRole("link", { name: "Environments" }).click();
    await page.locator("[data-env='default'] .badge", { hasText: "tenant default" }).waitFor();
    await page.getByRole("button", { name: "Delete lab two" }).click();
    await page
      .getByRole("group", { name: /Delete lab two\?/ })
      .getByRole("button", { name: "No" })
      .click();
    expect(await page.locator("[data-env='lab two']").count()).toBe(1);
    await page.getByRole("button", { name: "Delete lab two" }).click();
    await page.getByRole("button", { name: "Yes, delete" }).click();
    await page.locator("[data-env='lab two']").waitFor({ state: "detached" });
    const left = (await (await fetch(`${h.server.url}/v1/environments`, { headers: auth() })).json()) as { items: { name: string }[] };
    expect(left.items.map((e) => e.name)).toEqual(["default"]);
  });

  it("is usable with the keyboard, with a visible focus ring", async () => {
    await page.getByRole("link", { name: "Sessions" }).focus();
    let label = "";
    for (let i = 0; i < 10 && label !== "Environments"; i++) {
      await page.keyboard.press("Tab");
      label = await page.evaluate(() => document.activeElement?.textContent ?? "");
    }
    expect(label).toBe("Environments");
    const outline = await page.evaluate(() => {
      const s = getComputedStyle(document.activeElement as Element);
      return { style: s.outlineStyle, width: parseFloat(s.outlineWidth) };
    });
    expect(outline.style).toBe("solid");
    expect(outline.width).toBeGreaterThanOrEqual(2);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Environments" }).waitFor();
  });

  it("meets WCAG AA contrast for text and controls in light and dark", async () => {
    for (const colorScheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme });
      const worst = await page.evaluate(() => {
        const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
        const lum = (c: string) => {
          const [r, g, b] = rgb(c).map((v) => {
            const s = v / 255;
            return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
          }) as [number, number, number];
          return 0.2126 * r + 0.7152 * g + 0.0722 * b;
        };
        const background = (el: Element | null): string => {
          for (; el; el = el.parentElement) {
            const bg = getComputedStyle(el).backgroundColor;
            if (bg !== "rgba(0, 0, 0, 0)" && bg !== "transparent") return bg;
          }
          return getComputedStyle(document.body).backgroundColor;
        };
        const ratios = Array.from(document.querySelectorAll("a, button, label, h1, h2, td, th, .muted, .badge, .field-error, input, select"))
          .filter((el) => (el as HTMLElement).offsetParent !== null && el.textContent?.trim())
          .map((el) => {
            const a = lum(getComputedStyle(el).color);
            const b = lum(background(el));
            return { ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), text: el.textContent?.trim().slice(0, 30) };
          });
        return ratios.sort((x, y) => x.ratio - y.ratio)[0];
      });
      expect(worst?.ratio, `${colorScheme}: "${worst?.text}"`).toBeGreaterThanOrEqual(4.5);
    }
    await page.emulateMedia({ colorScheme: "light" });
  });

  it("shows a dark theme when the system prefers it", async () => {
    const { page: dark } = await h.open("#/sessions", { colorScheme: "dark" });
    await dark.getByLabel("API key").fill(adminKey);
    await dark.getByRole("button", { name: "Sign in" }).click();
    await dark.locator(`[data-session="${firstSession}"]`).waitFor();
    const [bg, fg] = await dark.evaluate(() => [getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]);
    expect(bg).toBe("rgb(18, 20, 23)");
    expect(fg).toBe("rgb(232, 234, 237)");
    await screenshot(dark, "sessions-dark");
  });

  it("creates a key (shown once) and revokes the signed-in key, after which the console is signed out", async () => {
    await page.getByRole("link", { name: "Keys" }).click();
    await page.getByLabel("Name").fill("ci");
    await page.getByRole("checkbox", { name: "sessions" }).check();
    await page.getByRole("button", { name: "Create key" }).click();
    const ci = (await page.locator("[data-secret]").textContent())?.trim() ?? "";
    expect(ci).toMatch(/^roz_sk_/);
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: h.server.url });
    await page.getByRole("button", { name: "Copy" }).click();
    await page.locator("[data-copied]", { hasText: "Copied." }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(ci);
    const res = await fetch(`${h.server.url}/v1/sessions`, { headers: { authorization: `Bearer ${ci}` } });
    expect(res.status).toBe(200);
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.locator("[data-secret]").count()).toBe(0);
    await page.reload();
    await page.getByRole("heading", { name: "API keys" }).waitFor();
    await page.locator("tr[data-key]").nth(1).waitFor();
    expect(await page.content()).not.toContain(ci);

    await page.getByRole("button", { name: "Revoke console admin" }).click();
    await page.getByRole("button", { name: "Yes, revoke" }).click();
    await page.getByRole("heading", { name: "Sign in to roz" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("roz.apiKey"))).toBeNull();
    expect((await fetch(`${h.server.url}/v1/sessions`, { headers: auth() })).status).toBe(401);
  });

  it("made no request to any other origin", () => {
    expect(h.foreignRequests).toEqual([]);
  });
});
