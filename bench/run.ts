/**
 * `npm run bench [-- --quick] [-- --profile] [-- --compare FILE] [-- <section>…]`: measures
 * our server against baselines taken in the same run and prints one table per section with
 * target, measured value and OK/MISS. The machine is shared and noisy, so nothing here fails
 * on a timing: the exit code is 0 unless a section crashed (then 1, after the other sections
 * ran). Every run is saved under bench/results/ (JSON, and an SVG of the latency curve);
 * `--compare FILE` then prints the change of each metric against that earlier run.
 *
 * Sections: transport, session, scale, tracing, persistence, search, anthropic, envelope, teams, abuse, bus, reattach, mcp, cluster, soak.
 */
import { runAbuse } from "./abuse.ts";
import { runAnthropic } from "./anthropic.ts";
import { runBus } from "./bus.ts";
import { runCluster } from "./cluster.ts";
import { runEnvelope } from "./envelope.ts";
import { runMcp } from "./mcp.ts";
import { runPersistence } from "./persistence.ts";
import { printComparison, type RunFile, saveRun } from "./results.ts";
import { runScale } from "./scale.ts";
import { runSearch } from "./search.ts";
import { runReattach } from "./reattach.ts";
import { runSession } from "./session.ts";
import { runSoak } from "./soak.ts";
import { type BenchOptions, printTable, type Row, within } from "./support.ts";
import { runTeams } from "./teams.ts";
import { runTracing } from "./tracing.ts";
import { runTransport } from "./transport.ts";

/** A section's time limit: `timeoutMs` when it sets one (one that stores a large data set first), else 300 s (120 s quick). */
const sections: Record<string, { title: string; run: (options: BenchOptions) => Promise<Row[]>; timeoutMs?: number }> = {
  transport: { title: "transport: StreamSession ping/pong", run: runTransport },
  session: { title: "session: deltas, tools, idle memory", run: runSession },
  scale: { title: "scale: latency curve over sessions, 10,000 idle sessions", run: runScale },
  tracing: { title: "tracing: server CPU per delta with OpenTelemetry traces unset and on", run: runTracing, timeoutMs: 600_000 },
  persistence: { title: "persistence: turns stored, turn latency", run: runPersistence },
  search: { title: "search: full-text search over 100,000 turns, a retention sweep of 10,000 sessions", run: runSearch, timeoutMs: 1_200_000 },
  anthropic: { title: "anthropic: deltas through the Messages adapter vs the SDK direct", run: runAnthropic },
  envelope: { title: "envelope: event formats encoded at the wire edge", run: runEnvelope },
  teams: { title: "teams: TeamEvents to watchers, WatchTeam replay", run: runTeams },
  abuse: { title: "abuse: event-loop blocks and a bystander's p99 ping per attack", run: runAbuse },
  bus: { title: "bus: NATS JetStream against the in-memory bus", run: runBus },
  reattach: { title: "reattach: re-attach latency and replay throughput", run: runReattach },
  mcp: { title: "mcp: an MCP tool call through roz vs the SDK client direct", run: runMcp },
  cluster: { title: "cluster: capacity of one node and two behind HAProxy, re-attach after a node is killed", run: runCluster },
  soak: { title: "soak: sessions doing tool turns for minutes, memory after they ended", run: runSoak, timeoutMs: 1_200_000 },
};

const usage = `usage: npm run bench -- [--quick] [--profile] [--compare FILE] [${Object.keys(sections).join("|")}]…`;

interface Args {
  flags: Set<string>;
  names: string[];
  compare?: string;
}

function parseArgs(argv: string[]): Args | { error: string } {
  const args: Args = { flags: new Set(), names: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--compare") {
      const file = argv[++i];
      if (file === undefined) return { error: "--compare needs a FILE (a JSON of bench/results/)" };
      args.compare = file;
    } else if (a.startsWith("--compare=")) args.compare = a.slice("--compare=".length);
    else if (a.startsWith("--")) args.flags.add(a);
    else args.names.push(a);
  }
  const unknown = [...args.names.filter((n) => !(n in sections)), ...[...args.flags].filter((f) => !["--quick", "--profile", "--help"].includes(f))];
  return unknown.length > 0 ? { error: `unknown argument(s): ${unknown.join(", ")}` } : args;
}

async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if ("error" in args) {
    console.error(`${args.error}\n${usage}`);
    return 2;
  }
  if (args.flags.has("--help")) {
    console.log(usage);
    return 0;
  }
  const options: BenchOptions = { quick: args.flags.has("--quick"), profile: args.flags.has("--profile"), figures: {} };
  const chosen = args.names.length > 0 ? args.names : Object.keys(sections);
  const run: RunFile = { startedAt: new Date().toISOString(), node: process.version, quick: options.quick, sections: {}, figures: options.figures };
  console.log(`roz bench (${options.quick ? "quick" : "full"}), node ${process.version}, ${chosen.join(", ")}`);
  console.log("Every ratio compares with a baseline measured in this same run; OK/MISS never changes the exit code.");
  let failed = false;
  const started = Date.now();
  for (const name of chosen) {
    const section = sections[name] as (typeof sections)[string];
    const t0 = Date.now();
    try {
      // A wedged section is reported as crashed instead of hanging the whole run.
      const rows = await within(section.run(options), section.timeoutMs ?? (options.quick ? 120_000 : 300_000), `section ${name}`);
      run.sections[name] = rows;
      printTable(`${section.title} [${((Date.now() - t0) / 1000).toFixed(0)} s]`, rows);
    } catch (err) {
      failed = true;
      console.log(`\n== ${section.title} ==\nCRASHED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
  }
  console.log(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s`);
  console.log(`saved ${saveRun(run)}`);
  if (args.compare) {
    try {
      printComparison(args.compare, run);
    } catch (err) {
      console.error(`--compare ${args.compare}: ${err instanceof Error ? err.message : String(err)}`);
      failed = true;
    }
  }
  return failed ? 1 : 0;
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
// Everything is closed by the sections; if a stray handle still holds the loop, say so and go.
setTimeout(() => {
  console.error("bench: handles still open after the run:", process.getActiveResourcesInfo().join(", "));
  process.exit(code);
}, 5000).unref();
