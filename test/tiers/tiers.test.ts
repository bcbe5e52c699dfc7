// Every test file belongs to exactly one tier: a file in none would never run, not even in CI.
import { globSync } from "node:fs";
import { matchesGlob } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { onEveryProvider, tiers } from "./tiers.ts";

const testFiles = globSync("test/**/*.test.ts", { cwd: fileURLToPath(new URL("../../", import.meta.url)) }).sort();
const tiersOf = (file: string): string[] => tiers.filter((tier) => tier.include.some((glob) => matchesGlob(file, glob))).map((tier) => tier.name);

describe("test tiers", () => {
  it("hold every test file exactly once", () => {
    expect(testFiles.length).toBeGreaterThan(100);
    const misplaced = testFiles.map((file) => ({ file, tiers: tiersOf(file) })).filter((entry) => entry.tiers.length !== 1);
    expect(misplaced, "add each file to one tier in test/tiers/tiers.ts").toEqual([]);
  });

  it("name no file that is gone", () => {
    const stale = tiers.flatMap((tier) => tier.include.filter((glob) => !testFiles.some((file) => matchesGlob(file, glob))));
    expect(stale).toEqual([]);
  });

  it("run the provider variants with the fast tier", () => {
    expect(onEveryProvider.filter((file) => tiersOf(file)[0] !== "fast")).toEqual([]);
  });
});
