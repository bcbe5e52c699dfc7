// The console's MCP servers screen against a real MCP server (the SDK's, test/support): add one,
// see it healthy, check it, refuse a credential without ROZ_SECRET_KEY next to the form, delete;
// with a secret key, add an OAuth server and get its authorization link.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.ts";
import { startOAuthServer, type TestOAuthServer } from "../support/oauth-server.ts";
import { type ConsoleHarness, haveChromium, screenshot, startConsole } from "./support/console.ts";

let h: ConsoleHarness;
let mcp: TestMcpServer;

beforeAll(async () => {
  if (!haveChromium) return;
  mcp = await startMcpServer();
  h = await startConsole({ ROZ_MCP_ALLOW_PRIVATE: "1" });
}, 60_000);
afterAll(async () => {
  await h?.close();
  await mcp?.close();
});

describe.skipIf(!haveChromium)("the MCP servers screen", () => {
  it("adds a server, shows it healthy, checks it, refuses a sealed credential without a secret key, and deletes it", async () => {
    const { page } = await h.open("#/mcp");
    await page.getByRole("heading", { name: "MCP servers" }).waitFor();
    await page.getByLabel("Name (tools are offered as mcp__name__tool)").fill("docs");
    await page.getByLabel("Streamable HTTP URL").fill(mcp.url);
    await page.getByRole("button", { name: "Add" }).click();
    const row = page.locator("[data-mcp-server='docs']");
    await row.locator("[data-health='healthy']").waitFor();
    await row.getByRole("button", { name: "Check now" }).click();
    await screenshot(page, "mcp-servers");

    // A bearer token needs ROZ_SECRET_KEY to be sealed: the refusal says so on the form.
    await page.getByLabel("Name (tools are offered as mcp__name__tool)").fill("private");
    await page.getByLabel("Streamable HTTP URL").fill(mcp.url);
    await page.getByLabel("Authentication").selectOption("bearer");
    await page.getByLabel("Token (stored sealed, never shown again)").fill("secret-token");
    await page.getByRole("button", { name: "Add" }).click();
    await page.locator("[role='alert']", { hasText: "ROZ_SECRET_KEY" }).waitFor();
    expect(await page.locator("[data-mcp-server='private']").count()).toBe(0);

    await row.getByRole("button", { name: "Delete" }).click();
    await row.waitFor({ state: "detached" });
    const listed = (await (await fetch(`${h.server.url}/v1/mcp-servers`)).json()) as { servers: unknown[] };
    expect(listed.servers).toEqual([]);
  });

  it("made no request to any other origin", () => {
    expect(h.foreignRequests).toEqual([]);
  });
});

describe.skipIf(!haveChromium)("an OAuth server on the MCP servers screen", () => {
  let sealed: ConsoleHarness;
  let as: TestOAuthServer;
  let secured: TestMcpServer;
  beforeAll(async () => {
    as = await startOAuthServer();
    secured = await startMcpServer({ oauth: as });
    sealed = await startConsole({ ROZ_MCP_ALLOW_PRIVATE: "1", ROZ_SECRET_KEY: randomBytes(32).toString("hex") });
  }, 60_000);
  afterAll(async () => {
    await sealed?.close();
    await secured?.close();
    await as?.close();
  });

  it("shows the authorization link Register answered; once authorized the server is healthy", async () => {
    const { page } = await sealed.open("#/mcp");
    await page.getByLabel("Name (tools are offered as mcp__name__tool)").fill("secure");
    await page.getByLabel("Streamable HTTP URL").fill(secured.url);
    await page.getByLabel("Authentication").selectOption("oauth");
    await page.getByLabel("Scopes (space-separated, optional)").fill("mcp:tools");
    await page.getByRole("button", { name: "Add" }).click();
    const link = page.locator("[data-oauth-pending='secure'] a", { hasText: "Authorize secure" });
    const href = (await link.getAttribute("href")) ?? "";
    expect(href.startsWith(`${as.url}/authorize?`)).toBe(true);
    expect(new URL(href).searchParams.get("scope")).toBe("mcp:tools");
    const row = page.locator("[data-mcp-server='secure']");
    await row.locator("[data-health='oauth_pending']").waitFor();
    await screenshot(page, "mcp-oauth-pending");

    // The user's browser follows the link (here the test does, so the page stays on roz).
    expect((await fetch(href)).status).toBe(200);
    await row.getByRole("button", { name: "Check now" }).click();
    await row.locator("[data-health='healthy']").waitFor();
    expect(await row.textContent()).toContain("oauth (sealed)");
    expect(sealed.foreignRequests).toEqual([]);
  });
});
