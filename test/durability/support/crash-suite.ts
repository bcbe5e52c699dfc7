/**
 * The crash-safety scenario, run the same way on every store: the real CLI as a child
 * process, concurrent sessions mid-turn, SIGKILL at a random moment, restart on the same
 * data, and checks through REST and straight on the database. Repeated for several rounds
 * on the same data, so later rounds also run on a store that already survived crashes.
 */
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../../rest/support.ts";
import { type SpawnedServer, spawnServer } from "../../support/server.ts";
import type { DurabilityBackend } from "./backend.ts";
import { checkStore } from "./consistency.ts";
import { sessionProblems } from "./verify-rest.ts";
import { startWorkload, type Workload } from "./workload.ts";

const ROUNDS = 3;
/** Sessions killed mid-turn per round (plus one that ends cleanly first). */
const SESSIONS = 4;
/** `turn_complete`s seen in a round before the kill may come. */
const MIN_COMPLETED = 20;

/** Polls until `check` returns true (generous: the machine may be busy). */
async function until(check: () => boolean, what: () => string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await delay(20);
  }
}

/** How many sessions of a dead node the server said it ended as abandoned (0 when it logged none). */
const orphansMarked = (server: SpawnedServer): number =>
  server
    .logLines()
    .filter((l) => l["msg"] === "ended sessions whose node stopped and that nobody re-attached to")
    .reduce((sum, l) => sum + Number(l["sessions"]), 0);

/** Defines the suite for one store; `makeBackend` runs in `beforeAll`. */
export function defineCrashSuite(name: string, makeBackend: () => Promise<DurabilityBackend>): void {
  describe(`crash safety: ${name}`, () => {
    let backend: DurabilityBackend | undefined;
    const servers: SpawnedServer[] = [];
    const spawn = async (): Promise<SpawnedServer> => {
      const server = await spawnServer({
        ...backend!.env,
        ROZ_SESSION_RATE_LIMIT_PER_MINUTE: "0",
        ROZ_RATE_LIMIT_PER_MINUTE: "0",
        ROZ_KEEPALIVE_INTERVAL_MS: "3600000",
        // Nobody re-attaches here: a killed node's sessions are ended as soon as its heartbeat expires.
        ROZ_DETACH_GRACE_MS: "0",
        ROZ_NODE_HEARTBEAT_MS: "100",
        ROZ_NODE_EXPIRY_MS: "300",
      });
      servers.push(server);
      return server;
    };

    beforeAll(async () => {
      backend = await makeBackend();
    });
    afterAll(async () => {
      for (const server of servers) await server.dispose();
      await backend?.dispose();
    });

    it(`keeps every completed turn and marks orphans after ${ROUNDS} SIGKILLs mid-turn`, async () => {
      let server = await spawn();
      const rounds: Workload[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        const load = await startWorkload(server.url, { tag: `r${round}`, sessions: SESSIONS });
        rounds.push(load);
        // A half-closed session's RPC ends only once its end is stored: it must not become an orphan.
        await load.cleanDone;
        const clean = load.logs.find((l) => l.kind === "clean")!;
        expect((await request(server.url, "GET", `/v1/sessions/${clean.sessionId}`)).json.status).toBe("completed");
        await until(
          () => load.completed() >= MIN_COMPLETED,
          () => `${MIN_COMPLETED} turns (saw ${load.completed()})`,
        );
        await delay(Math.floor(Math.random() * 300));

        load.expectEnd();
        server.child.kill("SIGKILL");
        expect((await server.exited).signal).toBe("SIGKILL");
        await load.settled();
        expect(load.logs.flatMap((l) => l.problems.map((p) => `${l.sessionId}: ${p}`))).toEqual([]);

        // The files / database exactly as the crash left them.
        const crashed = await checkStore(backend!);
        expect(crashed.integrity).toEqual(["ok"]);
        expect(crashed.problems).toEqual([]);
        expect(crashed.statuses["active"] ?? 0).toBe(SESSIONS);

        server = await spawn();
        await until(
          () => orphansMarked(server) >= SESSIONS,
          () => `${SESSIONS} abandoned sessions ended (saw ${orphansMarked(server)})`,
        );
        expect(orphansMarked(server)).toBe(SESSIONS);
        const problems = (await Promise.all(load.logs.map((log) => sessionProblems(server.url, log)))).flat();
        expect(problems).toEqual([]);
      }

      // Earlier rounds are intact after the later crashes and recoveries.
      const all = rounds.flatMap((r) => r.logs);
      expect((await Promise.all(all.map((log) => sessionProblems(server.url, log)))).flat()).toEqual([]);
      // The kills really cut turns: some sent turns never got stored.
      let cut = 0;
      for (const log of all.filter((l) => l.kind === "killed")) {
        cut += log.planned.length - (await request(server.url, "GET", `/v1/sessions/${log.sessionId}`)).json.turn_count;
      }
      expect(cut).toBeGreaterThan(0);

      expect((await server.stop("SIGTERM")).code).toBe(0);
      const final = await checkStore(backend!);
      expect(final.integrity).toEqual(["ok"]);
      expect(final.problems).toEqual([]);
      expect(final.statuses).toEqual({ completed: ROUNDS, cancelled: ROUNDS * SESSIONS });
    }, 120_000);
  });
}
