/**
 * Runs test tiers one after another, each as its own vitest run (`npm run test:all` runs them
 * all, as CI does): `node test/tiers/run.ts [tier …] [-- vitest arguments]`. Ends with each
 * tier's wall time and counts, then the plain line "N passed, N failed, N skipped" summed over
 * every tier; exits non-zero when any tier failed.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { projectsOf, tiers } from "./tiers.ts";

interface Counts {
  passed: number;
  failed: number;
  skipped: number;
}

interface TierRun extends Counts {
  name: string;
  seconds: number;
  exitCode: number;
}

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const vitest = join(repoRoot, "node_modules", "vitest", "vitest.mjs");

/** Counts from vitest's JSON report; a run that wrote none counts as one failure. */
function countsOf(reportPath: string): Counts {
  try {
    const r = JSON.parse(readFileSync(reportPath, "utf8")) as Record<string, number>;
    return { passed: r["numPassedTests"]!, failed: r["numFailedTests"]!, skipped: r["numPendingTests"]! + r["numTodoTests"]! };
  } catch {
    return { passed: 0, failed: 1, skipped: 0 };
  }
}

function runVitest(args: readonly string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [vitest, "run", ...args], { cwd: repoRoot, stdio: "inherit" });
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const format = (seconds: number): string => `${Math.floor(seconds / 60)}m ${String(Math.round(seconds % 60)).padStart(2, "0")}s`;

async function main(argv: readonly string[]): Promise<number> {
  const dash = argv.indexOf("--");
  const names = dash === -1 ? argv : argv.slice(0, dash);
  const extra = dash === -1 ? [] : argv.slice(dash + 1);
  const unknown = names.filter((name) => !tiers.some((tier) => tier.name === name));
  if (unknown.length > 0) {
    console.error(`unknown tier ${unknown.join(", ")}; tiers: ${tiers.map((tier) => tier.name).join(", ")}`);
    return 2;
  }
  const chosen = names.length === 0 ? tiers : tiers.filter((tier) => names.includes(tier.name));
  const reports = mkdtempSync(join(tmpdir(), "roz-tiers-"));
  const runs: TierRun[] = [];
  try {
    for (const tier of chosen) {
      console.log(`\n== tier ${tier.name}: ${tier.holds}`);
      const report = join(reports, `${tier.name}.json`);
      const started = performance.now();
      const projects = projectsOf(tier).flatMap((project) => ["--project", project]);
      const exitCode = await runVitest([...projects, "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...extra]);
      const counts = countsOf(report);
      // A run that failed outside any test (an unhandled error, a crashed worker) still counts as a failure.
      if (exitCode !== 0 && counts.failed === 0) counts.failed = 1;
      runs.push({ name: tier.name, seconds: (performance.now() - started) / 1000, exitCode, ...counts });
    }
  } finally {
    rmSync(reports, { recursive: true, force: true });
  }
  const total = runs.reduce((sum, run) => ({ passed: sum.passed + run.passed, failed: sum.failed + run.failed, skipped: sum.skipped + run.skipped }), {
    passed: 0,
    failed: 0,
    skipped: 0,
  });
  console.log("\n== tier wall times");
  for (const run of runs)
    console.log(`${run.name.padEnd(10)} ${format(run.seconds).padStart(7)}  ${run.passed} passed, ${run.failed} failed, ${run.skipped} skipped`);
  console.log(`${"all".padEnd(10)} ${format(runs.reduce((sum, run) => sum + run.seconds, 0)).padStart(7)}`);
  console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
  return total.failed > 0 ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
