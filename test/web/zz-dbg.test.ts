import { it } from "vitest";
import { startConsole } from "/work/wt/web/test/web/support/console.ts";
it("dbg", async () => {
  const h = await startConsole({ ROZ_AUTH: "required" });
  const { page } = await h.open();
  page.on("console", (m) => console.log("CONSOLE", m.type(), m.text()));
  page.on("pageerror", (e) => console.log("PAGEERROR", e.message));
  try { await page.getByText("open mode").waitFor({ timeout: 5000 }); console.log("OK1"); } catch (e) { console.log("ERR1", (e as Error).message.slice(0, 500)); }
  try { await page.getByRole("link", { name: "Keys" }).click({ timeout: 5000 }); console.log("OK2"); } catch (e) { console.log("ERR2", (e as Error).message.slice(0, 500)); }
  try { await page.getByLabel("Name").fill("x", { timeout: 5000 }); console.log("OK3"); } catch (e) { console.log("ERR3", (e as Error).message.slice(0, 800)); }
  await page.screenshot({ path: "/tmp/webdbg/a.png" });
  await h.close();
}, 60000);
