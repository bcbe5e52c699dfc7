import { describe, expect, it } from "vitest";
import { findPostgres } from "./postgres.ts";

describe("the test suite's PostgreSQL", () => {
  it("never uses a developer's DATABASE_URL (it creates and drops databases there)", async () => {
    // An address that cannot resolve: connecting to it would fail with ENOTFOUND.
    const found = await findPostgres({ DATABASE_URL: "postgres://developer@real-database.invalid:5432/production" });
    try {
      expect(found.pg?.source).not.toBe("env");
      expect(found.pg?.url ?? "").not.toContain("real-database.invalid");
    } finally {
      await found.pg?.stop();
    }
  });

  it("uses ROZ_TEST_DATABASE_URL when it is set", async () => {
    const url = process.env.ROZ_TEST_DATABASE_URL;
    if (url === undefined) return expect(url).toBeUndefined();
    const found = await findPostgres({ ROZ_TEST_DATABASE_URL: url, DATABASE_URL: "postgres://developer@real-database.invalid/production" });
    expect(found.pg).toMatchObject({ source: "env", url });
  });
});
