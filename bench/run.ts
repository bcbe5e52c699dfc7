/**
 * `npm run bench [-- --quick] [-- --profile] [-- <section>…]`: measures our server against
 * baselines taken in the same run and prints one table per section with target, measured
 * value and OK/MISS. The machine is shared and noisy, so nothing here fails on a timing:
 * the exit code is 0 unless a section crashed (then 1, after the other sections ran).
 *
 * Sections: transport (issue 3), session (issue 4), persistence (issue 5), anthropic, envelope (event formats), teams, abuse (issue 9), reattach.
 */
import { runAbuse } from "./abuse.ts";
import { runAnthropic } from "./anthropic.ts";
import { runEnvelope } from "./envelope.ts";
import { runPersistence } from "./persistence.ts";
import { runReattach } from "./reattach.ts";
import { runSession } from "./session.ts";
import { type BenchOptions, printTable, type Row, within } from "./support.ts";
import { runTeams } from "./teams.ts";
import { runTransport } from "./transport.ts";

const sections: Record<string, { title: string; run: (options: BenchOptions) => Promise<Row[]> }> = {
  transport: { title: "transport (issue 3): StreamSession ping/pong", run: runTransport },
  session: { title: "session (issue 4): deltas, latency, tools, idle memory", run: runSession },
  persistence: { title: "persistence (issue 5): turns stored, turn latency", run: runPersistence },
  anthropic: { title: "anthropic: deltas through the Messages adapter vs the SDK direct", run: runAnthropic },
  envelope: { title: "envelope: event formats encoded at the wire edge", run: runEnvelope },
  teams: { title: "teams: TeamEvents to watchers, WatchTeam replay", run: runTeams },
  abuse: { title: "abuse (issue 9): event-loop blocks and a bystander's p99 ping per attack", run: runAbuse },
  reattach: { title: "reattach: re-attach latency and replay throughput", run: runReattach },
};

const usage = `usage: npm run bench -- [--quick] [--profile] [${Object.keys(sections).join("|")}]…`;

async function main(argv: string[]): Promise<number> {
  const flags = new Set(argv.filter((a) => a.startsWith("--")));
  const names = argv.filter((a) => !a.startsWith("--"));
  const unknown = [...names.filter((n) => !(n in sections)), ...[...flags].filter((f) => !["--quick", "--profile", "--help"].includes(f))];
  if (unknown.length > 0 || flags.has("--help")) {
    if (unknown.length === 0) {
      console.log(usage);
      return 0;
    }
    console.error(`unknown argument(s): ${unknown.join(", ")}\n${usage}`);
    return 2;
  }
  const options: BenchOptions = { quick: flags.has("--quick"), profile: flags.has("--profile") };
  const chosen = names.length > 0 ? names : Object.keys(sections);
  console.log(`roz bench (${options.quick ? "quick" : "full"}), node ${process.version}, ${chosen.join(", ")}`);
  console.log("Every ratio compares with a baseline measured in this same run; OK/MISS never changes the exit code.");
  let failed = false;
  const started = Date.now();
  for (const name of chosen) {
    const section = sections[name] as (typeof sections)[string];
    const t0 = Date.now();
    try {
      // A wedged section is reported as crashed instead of hanging the whole run.
      const rows = await within(section.run(options), options.quick ? 120_000 : 300_000, `section ${name}`);
      printTable(`${section.title} [${((Date.now() - t0) / 1000).toFixed(0)} s]`, rows);
    } catch (err) {
      failed = true;
      console.log(`\n== ${section.title} ==\nCRASHED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
  }
  console.log(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return failed ? 1 : 0;
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
// Everything is closed by the sections; if a stray handle still holds the loop, say so and go.
setTimeout(() => {
  console.error("bench: handles still open after the run:", process.getActiveResourcesInfo().join(", "));
  process.exit(code);
}, 5000).unref();
