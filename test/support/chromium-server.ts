// The browser tier's global setup: one Chromium for every file and worker of the tier (files
// connect to it through `launchChromium`, each with contexts of its own), closed at the end.
import { chromium } from "playwright-core";
import type { TestProject } from "vitest/node";
import { haveChromium, launchOptions } from "./chromium.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!haveChromium) return async () => undefined;
  const server = await chromium.launchServer(launchOptions);
  project.provide("chromiumEndpoint", server.wsEndpoint());
  return () => server.close();
}
