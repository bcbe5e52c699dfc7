// The console's MCP servers screen against a real MCP server (the SDK's, test/support): add one,
// see it healthy, check it, refuse a credential without ROZ_SECRET_KEY next to the form, delete.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.ts";
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
