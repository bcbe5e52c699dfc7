// Issue 5, crash safety on PostgreSQL: SIGKILL the real server mid-turn, restart on the same DATABASE_URL.
// Skips with a notice when no PostgreSQL can be had (fails instead under ROZ_REQUIRE_POSTGRES=1).
import { afterAll, describe, it } from "vitest";
import { postgresForTests } from "../support/postgres.ts";
import { postgresBackend } from "./support/backend.ts";
import { defineCrashSuite } from "./support/crash-suite.ts";

const server = await postgresForTests();

if (server === undefined) {
  describe.skip("crash safety: postgres (no PostgreSQL available)", () => {
    it("needs PostgreSQL", () => undefined);
  });
} else {
  afterAll(() => server.stop());
  defineCrashSuite("postgres", () => postgresBackend(server));
}
