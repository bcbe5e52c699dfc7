// Sessions survive SIGTERM and SIGKILL restarts on PostgreSQL.
// Skips with a notice when no PostgreSQL can be had (fails instead under ROZ_REQUIRE_POSTGRES=1).
import { afterAll, describe, it } from "vitest";
import { postgresForTests } from "../support/postgres.ts";
import { postgresBackend } from "./support/backend.ts";
import { defineRestartSuite } from "./support/restart-suite.ts";

const server = await postgresForTests();

if (server === undefined) {
  describe.skip("sessions survive restarts: postgres (no PostgreSQL available)", () => {
    it("needs PostgreSQL", () => undefined);
  });
} else {
  afterAll(() => server.stop());
  defineRestartSuite("postgres", () => postgresBackend(server));
}
