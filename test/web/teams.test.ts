// A team drawn live: a session's agent spawns three workers (the built-in spawn_worker tool),
// the console follows TeamStarted to the task and draws each worker from WatchTeam until all
// are done. Skips, saying why, on a server without tasks or without AttachSession.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveChromium, screenshot, script, serverHasAttach, serverHasTasks, startConsole, type ConsoleHarness } from "./support/console.ts";

let h: ConsoleHarness;
let missing = "";
let noTasks = "";
beforeAll(async () => {
  if (!haveChromium) return;
  h = await startConsole();
  if (!(await serverHasTasks(h.server))) noTasks = "the server has no /v1/tasks yet: the teams feature is not merged";
  if (!(await serverHasAttach(h.server))) missing = "the server has no AttachSession yet (UNIMPLEMENTED): the re-attach feature is not merged";
  missing ||= noTasks;
}, 60_000);
afterAll(async () => {
  await h?.close();
});

/** A worker's prompt: the scripted model plays it (a pause, so the console sees it running, then its result). */
const workerPrompt = (n: number) => script([[{ delay_ms: 4000 }, { text: `worker ${n} done` }]]);

describe.skipIf(!haveChromium)("teams", () => {
  it("lists a task made over REST and draws its three workers live until all are done", async (ctx) => {
    if (noTasks) ctx.skip(noTasks);
    const res = await fetch(`${h.server.url}/v1/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "three checks", workers: [1, 2, 3].map((n) => ({ prompt: workerPrompt(n) })) }),
    });
    expect(res.status).toBe(201);
    const task = (await res.json()) as { id: string };
    const { page } = await h.open("#/teams");
    const row = page.locator(`tr[data-task="${task.id}"]`);
    await row.waitFor();
    expect(await row.locator(".status").textContent()).toBe("running");
    expect(await row.textContent()).toMatch(/\d+ s ago.*so far.*three checks/);
    await page.getByRole("link", { name: new RegExp(task.id.slice(0, 8)) }).click();
    await page.locator("tr[data-worker]").nth(2).waitFor();
    await page.locator("tr[data-worker][data-state='running']").first().waitFor();
    await page.locator("tr[data-worker][data-state='completed']").nth(2).waitFor({ timeout: 60_000 });
    expect((await page.locator("tr[data-worker] .result").allTextContents()).sort()).toEqual(["worker 1 done", "worker 2 done", "worker 3 done"]);
    await page.locator("[data-team-status='finished']").waitFor();
    // The lanes are drawn over a time axis with labelled ticks from the first start ("0").
    const ticks = await page.locator("svg.lanes [data-axis] text.tick").allTextContents();
    expect(ticks[0]).toBe("0");
    expect(ticks.length).toBeGreaterThanOrEqual(2);
    expect(ticks.slice(1).every((t) => /^\d+ (ms|s)$/.test(t))).toBe(true);
    await screenshot(page, "team");
    expect(h.foreignRequests).toEqual([]);
  }, 120_000);

  it("draws a team of three workers live, with each worker's result", async (ctx) => {
    if (missing) ctx.skip(missing);
    // The team tools are opt-in: an environment made in the console turns them on.
    const { page } = await h.open("#/environments");
    await page.getByRole("button", { name: "New environment" }).click();
    const form = page.getByRole("form", { name: "New environment" });
    await form.getByLabel("Name", { exact: true }).fill("team");
    await form.getByLabel("Team tools").selectOption("on");
    await form.getByRole("button", { name: "Save" }).click();
    await page.locator("[data-env='team'] .badge", { hasText: "team tools" }).waitFor();
    await page.goto(`${h.server.url}/#/new`);
    await page.getByLabel("Environment").locator("option", { hasText: "team" }).waitFor({ state: "attached" });
    await page.getByLabel("Environment").selectOption({ label: "team" });
    await page.locator("[data-teams='true']").waitFor();
    await page
      .getByLabel("Message")
      .fill(
        script([
          [1, 2, 3].map((n) => ({ tool_call: { id: `spawn_${n}`, name: "spawn_worker", arguments: { prompt: workerPrompt(n) } } })),
          [{ tool_call: { id: "wait", name: "wait_for_workers", arguments: {} } }],
          [{ text: "team finished" }],
        ]),
      );
    await page.getByRole("button", { name: "Start" }).click();
    await page.getByRole("link", { name: /watch task/ }).click();
    await page.locator("tr[data-worker]").nth(2).waitFor();
    await page.locator("tr[data-worker][data-state='running']").first().waitFor();
    await page.locator("svg.lanes .lane").nth(2).waitFor();
    await screenshot(page, "team-running");
    await page.locator("tr[data-worker][data-state='completed']").nth(2).waitFor({ timeout: 60_000 });
    const results = await page.locator("tr[data-worker] .result").allTextContents();
    expect(results.sort()).toEqual(["worker 1 done", "worker 2 done", "worker 3 done"]);
    await page.getByText(/3 workers · 3 done · 0 failed/).waitFor();
    await screenshot(page, "team");
    expect(h.foreignRequests).toEqual([]);
  }, 120_000);
});
