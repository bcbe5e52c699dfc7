import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { openStore, type StoreSettings } from "../../../src/store/index.ts";
import type { SuiteContext } from "../conformance.ts";
import { sumUsage, toolCallsFor, uniqueName, usageFor } from "../fixtures.ts";

const WRITER = fileURLToPath(new URL("../crash-writer.ts", import.meta.url));
const ROUNDS = 5;

/**
 * Runs the writer until it has acknowledged at least `minTurns` turns, lets it go on for a
 * random moment, then SIGKILLs it. Returns its session id and the last acknowledged turn.
 */
async function writeUntilKilled(settings: StoreSettings, tenantName: string, minTurns: number) {
  // process.execPath is the Node that runs the tests (Node 24 under `npx vitest`).
  const child = spawn(process.execPath, ["--no-warnings", WRITER, JSON.stringify(settings), tenantName], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)));
  let sessionId: string | undefined;
  let acked = 0;
  let killTimer: NodeJS.Timeout | undefined;
  for await (const line of createInterface({ input: child.stdout })) {
    const [word, value] = line.split(" ");
    if (word === "session") sessionId = value;
    if (word === "turn") acked = Number(value);
    if (acked >= minTurns && killTimer === undefined) {
      killTimer = setTimeout(() => child.kill("SIGKILL"), Math.floor(Math.random() * 120));
    }
  }
  const how = await exited;
  if (how !== "SIGKILL") throw new Error(`writer ended with ${String(how)} instead of SIGKILL: ${stderr}`);
  return { sessionId: sessionId!, acked };
}

export function crashSuite(ctx: SuiteContext): void {
  describe("crash safety", () => {
    it("kill -9 while appending leaves a consistent database that lost at most the turn in flight", async () => {
      const settings = await ctx.harness.newDatabase();
      const tenantName = uniqueName("crash");
      const runs = [];
      for (let round = 0; round < ROUNDS; round++) runs.push(await writeUntilKilled(settings, tenantName, 2 + round * 3));

      await ctx.harness.integrityCheck(settings);
      const store = await openStore(settings);
      try {
        const tenant = (await store.getTenantByName(tenantName))!;
        for (const { sessionId, acked } of runs) {
          const session = (await store.getSession(tenant.id, sessionId))!;
          // Every acknowledged turn survived; at most the one in flight is missing.
          expect(session.turnCount).toBeGreaterThanOrEqual(acked);
          expect(session.turnCount).toBeLessThanOrEqual(acked + 1);
          const turns = (await store.listTurns(tenant.id, sessionId))!;
          expect(turns.map((t) => t.seq)).toEqual(Array.from({ length: session.turnCount }, (_, i) => i + 1));
          // No partial turn: every turn has exactly the tool calls it was written with.
          for (const t of turns) {
            expect(t.toolCalls.map((c) => c.id)).toEqual(toolCallsFor(t.seq).map((c) => c.id));
            expect(t.usage).toEqual(usageFor(t.seq));
          }
          expect(session.usage).toEqual(sumUsage(turns.map((t) => usageFor(t.seq))));
          expect(session.compactionCount).toBe(turns.reduce((n, t) => n + t.compactions, 0));
          // Event batches are all-or-nothing, and come after their turn.
          const events = (await store.readEvents(tenant.id, sessionId, { limit: 100_000 }))!;
          expect(events.length % 3).toBe(0);
          expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
          expect(events.length / 3).toBeGreaterThanOrEqual(session.turnCount - 1);
          expect(events.length / 3).toBeLessThanOrEqual(session.turnCount);
        }
      } finally {
        await store.close();
      }
    }, 60_000);
  });
}
