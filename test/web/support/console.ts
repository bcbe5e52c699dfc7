/**
 * The web console under test: built from web/ into a temporary folder, served by a real
 * server (test/support/server.ts), driven by Debian's Chromium through playwright-core.
 * Every page records requests to other origins, and screenshots go to
 * test-artifacts/screenshots/ (CI keeps that folder as an artifact).
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, Code, ConnectError } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { launchChromium } from "../../support/chromium.ts";
import { AgentService } from "../../../src/gen/roz/v1/agent_pb.js";
import { buildConsole } from "../../../web/build.ts";
import { repoRoot, startServer, type TestServer } from "../../support/server.ts";
import { sessionClientFactory } from "../../support/session-client.ts";
import { readTurn, rq, startSession } from "../../support/session-protocol.ts";

/** Without Chromium the browser tests skip locally; in CI (`CI` set) they must run. */
export { CHROMIUM, haveChromium } from "../../support/chromium.ts";

export const SCREENSHOTS = join(repoRoot, "test-artifacts", "screenshots");

export interface ConsoleHarness {
  readonly server: TestServer;
  readonly browser: Browser;
  /** Requests any page of this harness made to an origin other than the server's. */
  readonly foreignRequests: string[];
  /** A fresh browser context (own sessionStorage) with one page at `hash` (e.g. `#/keys`). */
  open(hash?: string, options?: { colorScheme?: "light" | "dark" }): Promise<{ context: BrowserContext; page: Page }>;
  close(): Promise<void>;
}

/** Builds the console, starts a server serving it (`env` adds settings), and launches Chromium (a new profile each launch). */
export async function startConsole(env: Record<string, string> = {}): Promise<ConsoleHarness> {
  const dir = await mkdtemp(join(tmpdir(), "roz-console-"));
  await buildConsole(dir);
  const server = await startServer({ ROZ_CONSOLE_DIR: dir, ...env });
  const browser = await launchChromium();
  const origin = new URL(server.url).origin;
  const foreignRequests: string[] = [];
  const contexts: BrowserContext[] = [];
  return {
    server,
    browser,
    foreignRequests,
    async open(hash = "", options = {}) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: options.colorScheme ?? "light" });
      contexts.push(context);
      context.on("request", (request) => {
        const url = request.url();
        if (!url.startsWith("data:") && new URL(url).origin !== origin) foreignRequests.push(url);
      });
      // Failures should say what they waited for well before the test's own timeout.
      context.setDefaultTimeout(15_000);
      const page = await context.newPage();
      await page.goto(`${server.url}/${hash}`);
      return { context, page };
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => undefined);
      await browser.close().catch(() => undefined);
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Saves a full-page screenshot as test-artifacts/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** A connect-node client of the server (for the test's own calls: seeding, second clients). */
export function rpcClient(server: TestServer, headers: Record<string, string> = {}) {
  return createClient(
    AgentService,
    createConnectTransport({
      baseUrl: server.url,
      httpVersion: "1.1",
      interceptors: [
        (next) => (req) => {
          for (const [k, v] of Object.entries(headers)) req.header.set(k, v);
          return next(req);
        },
      ],
    }),
  );
}

/**
 * Whether this server serves AttachSession (re-attach branch). Asks once with an unknown
 * session id: UNIMPLEMENTED means the feature is missing; NOT_FOUND means it is there.
 */
export async function serverHasAttach(server: TestServer): Promise<boolean> {
  try {
    for await (const _ of rpcClient(server).attachSession({ target: { case: "sessionId", value: crypto.randomUUID() } })) break;
    return true;
  } catch (err) {
    return ConnectError.from(err).code !== Code.Unimplemented;
  }
}

/** Whether this server has tasks (teams branch): `GET /v1/tasks` is a route, not a JSON 404 `route_not_found`. */
export async function serverHasTasks(server: TestServer): Promise<boolean> {
  const res = await fetch(`${server.url}/v1/tasks`);
  const body = (await res.json().catch(() => ({}))) as { error?: { code?: string } };
  return body.error?.code !== "route_not_found";
}

/** An inline script for the scripted model (see src/models/scripted/README.md). */
export const script = (responses: unknown[][], extra: Record<string, unknown> = {}): string => `script: ${JSON.stringify({ responses, ...extra })}`;

/**
 * Runs one whole session over StreamSession (connect-node, h2c): start, one message, its
 * turn, half-close. Returns the session id. Seeds real sessions for the console to show.
 */
export async function runOneTurnSession(server: TestServer, content: string, headers: Record<string, string> = {}): Promise<string> {
  const factory = sessionClientFactory("connect", server.url);
  try {
    const client = factory.open(headers);
    const started = await startSession(client);
    client.send(rq.user(content));
    await readTurn(client);
    client.end();
    await client.status;
    return started.sessionId;
  } finally {
    factory.close();
  }
}
