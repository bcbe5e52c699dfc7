// Debian's Chromium driven by playwright-core: the one way every browser test launches it.
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

export const CHROMIUM = process.env["ROZ_TEST_CHROMIUM"] ?? "/usr/bin/chromium";

/** True where the browser tests can run; in CI they must (a missing browser then fails them). */
export const haveChromium = existsSync(CHROMIUM) || process.env["CI"] !== undefined;

/** Headless, without the sandbox (root) and without the background requests this closed network refuses. */
const launchArgs = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: launchArgs, headless: true });
}
