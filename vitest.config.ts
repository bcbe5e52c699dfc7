import { defineConfig } from "vitest/config";

/** The session suites of spec §1–§4 that also run end to end on provider `anthropic`. */
const onEveryProvider = [
  "test/session/cancel.test.ts",
  "test/session/deltas.test.ts",
  "test/session/lifecycle.test.ts",
  "test/session/permissions.test.ts",
  "test/session/stop-reasons.test.ts",
  "test/session/tools.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default"],
    projects: [
      { extends: true, test: { name: "default", include: ["test/**/*.test.ts"] } },
      // The same files with the fixture's default model on the Anthropic Messages API (test/session/fixture.ts).
      { extends: true, test: { name: "anthropic", include: onEveryProvider, env: { ROZ_TEST_PROVIDER: "anthropic" } } },
    ],
  },
});
