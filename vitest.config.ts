import { defineConfig } from "vitest/config";
import { onEveryProvider, tiers } from "./test/tiers/tiers.ts";

/** What a tier's project needs besides its files: the shared Chromium, the one cluster topology. */
const tierSettings: Record<string, object> = {
  // Its files mostly wait on sockets and timers: two workers on two cores, where vitest's default is one.
  // Each worker keeps its modules from file to file (importing them afresh per file was a third of
  // the tier's time); a file that mocks a module belongs to the processes tier, which isolates.
  fast: { maxWorkers: 2, isolate: false },
  // Two workers: its files mostly wait on child processes, so two of them share the two cores well.
  processes: { maxWorkers: 2 },
  browser: { globalSetup: ["test/support/chromium-server.ts"] },
  // One worker that keeps its modules across files: they share one topology (test/support/shared-cluster.ts).
  // Its own group, so that a run mixing tiers runs it after the others (vitest refuses two worker counts in one group).
  cluster: { isolate: false, fileParallelism: false, maxWorkers: 1, sequence: { groupOrder: 1 } },
  // One file that builds images and runs containers: alone, after everything else.
  image: { fileParallelism: false, maxWorkers: 1, sequence: { groupOrder: 2 } },
};

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default"],
    projects: [
      ...tiers.map((tier) => ({ extends: true, test: { name: tier.name, include: [...tier.include], ...tierSettings[tier.name] } })),
      // The same files with the fixture's default model on the Anthropic Messages API (test/session/fixture.ts).
      { extends: true, test: { name: "anthropic", include: [...onEveryProvider], maxWorkers: 2, isolate: false, env: { ROZ_TEST_PROVIDER: "anthropic" } } },
    ],
  },
});
