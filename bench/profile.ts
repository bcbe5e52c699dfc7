/**
 * Reads a V8 `.cpuprofile` (written by `node --cpu-prof`) and prints where the time went:
 * the functions with the most self time, and the same summed per source file, with paths
 * shortened to the repository. Used with `npm run bench -- --profile`.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const repoRoot = fileURLToPath(new URL("../", import.meta.url));

const shortUrl = (url: string): string => {
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  return path.startsWith(repoRoot) ? path.slice(repoRoot.length) : path || "(native)";
};

/** Self time (µs) per key, largest first, and the total of busy (non-idle) time. */
function selfTimes(profile: CpuProfile, key: (node: ProfileNode) => string): { rows: [string, number][]; busy: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    if (!node || node.callFrame.functionName === "(idle)") return;
    const dt = profile.timeDeltas[i] ?? 0;
    busy += dt;
    const k = key(node);
    totals.set(k, (totals.get(k) ?? 0) + dt);
  });
  return { rows: [...totals].sort((a, b) => b[1] - a[1]), busy };
}

/** Inclusive time (µs) of our own functions (under `src/`): which layer the time is spent below. */
function ownInclusiveTimes(profile: CpuProfile): [string, number][] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const totals = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const node = byId.get(at);
      if (!node) break;
      const url = shortUrl(node.callFrame.url);
      if (!url.startsWith("src/")) continue;
      const k = `${node.callFrame.functionName || "(anonymous)"}  ${url}:${node.callFrame.lineNumber + 1}`;
      if (seen.has(k)) continue;
      seen.add(k);
      totals.set(k, (totals.get(k) ?? 0) + dt);
    }
  });
  return [...totals].sort((a, b) => b[1] - a[1]);
}

/** Prints the top functions and files of the profile at `path`. */
export function summarizeProfile(path: string, title: string, top = 15): void {
  const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const fn = selfTimes(profile, (n) => `${n.callFrame.functionName || "(anonymous)"}  ${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`);
  const file = selfTimes(profile, (n) => {
    const url = shortUrl(n.callFrame.url);
    // node_modules/<pkg>/…: one line per package reads better than one per file.
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    return m ? `node_modules/${m[1]}` : url;
  });
  const pct = (us: number): string => `${((100 * us) / Math.max(1, fn.busy)).toFixed(1).padStart(5)}%`;
  console.log(`\n-- profile: ${title} (busy ${(fn.busy / 1000).toFixed(0)} ms; ${path}) --`);
  console.log("top functions by self time:");
  for (const [k, us] of fn.rows.slice(0, top)) console.log(`  ${pct(us)}  ${k}`);
  console.log("by file / package:");
  for (const [k, us] of file.rows.slice(0, 10)) console.log(`  ${pct(us)}  ${k}`);
  console.log("our functions (src/) by total time, callees included:");
  for (const [k, us] of ownInclusiveTimes(profile).slice(0, top)) console.log(`  ${pct(us)}  ${k}`);
}
