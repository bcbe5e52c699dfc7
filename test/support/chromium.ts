// Debian's Chromium driven by playwright-core: the one way every browser test launches it.
import { existsSync } from "node:fs";
import { type Browser, chromium, type LaunchOptions } from "playwright-core";
import { inject } from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    /** The browser tier's one Chromium (test/support/chromium-server.ts), when it runs one. */
    chromiumEndpoint?: string;
  }
}

export const CHROMIUM = process.env["ROZ_TEST_CHROMIUM"] ?? "/usr/bin/chromium";

/** True where the browser tests can run; in CI they must (a missing browser then fails them). */
export const haveChromium = existsSync(CHROMIUM) || process.env["CI"] !== undefined;

/** Headless, without the sandbox (root) and without the background requests this closed network refuses. */
export const launchOptions: LaunchOptions = {
  executablePath: CHROMIUM,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
};

/**
 * A browser for one test file: a connection to the tier's shared Chromium when there is one
 * (closing it closes only this file's contexts), else a Chromium of its own.
 */
export function launchChromium(): Promise<Browser> {
  const endpoint = inject("chromiumEndpoint");
  return endpoint === undefined ? chromium.launch(launchOptions) : chromium.connect(endpoint);
}
