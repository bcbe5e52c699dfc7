// Sessions nobody runs, on PostgreSQL.
// Skips with a notice when no PostgreSQL can be had (fails instead under ROZ_REQUIRE_POSTGRES=1).
import { afterAll, describe, it } from "vitest";
import { postgresForTests } from "../support/postgres.ts";
import { postgresBackend } from "./support/backend.ts";
import { defineOrphanSuite } from "./support/orphan-suite.ts";

const server = await postgresForTests();

if (server === undefined) {
  describe.skip("sessions nobody runs: postgres (no PostgreSQL available)", () => {
    it("needs PostgreSQL", () => undefined);
  });
} else {
  afterAll(() => server.stop());
  defineOrphanSuite("postgres", () => postgresBackend(server));
}
