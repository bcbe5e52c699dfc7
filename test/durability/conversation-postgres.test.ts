// Issue 5, sessions end to end on PostgreSQL: tool-call conversation → REST → StartSession.history.
// Skips with a notice when no PostgreSQL can be had (fails instead under ROZ_REQUIRE_POSTGRES=1).
import { afterAll, describe, it } from "vitest";
import { postgresForTests } from "../support/postgres.ts";
import { postgresBackend } from "./support/backend.ts";
import { defineConversationSuite } from "./support/conversation-suite.ts";

const server = await postgresForTests();

if (server === undefined) {
  describe.skip("sessions end to end: postgres (no PostgreSQL available)", () => {
    it("needs PostgreSQL", () => undefined);
  });
} else {
  afterAll(() => server.stop());
  defineConversationSuite("postgres", () => postgresBackend(server));
}
