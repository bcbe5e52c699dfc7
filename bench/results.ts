/**
 * A run's figures on disk: every section's rows (and structured figures such as the
 * latency curve) saved as JSON under bench/results/ (git-ignored), an SVG chart of latency
 * against sessions next to it, and `--compare FILE`: the change of every metric against an
 * earlier run's JSON.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { CurvePoint } from "./scale.ts";
import { fmt, quantile, type Row } from "./support.ts";

export interface RunFile {
  startedAt: string;
  node: string;
  quick: boolean;
  sections: Record<string, Row[]>;
  figures: Record<string, unknown>;
}

export const resultsDir = fileURLToPath(new URL("./results/", import.meta.url));

/** Writes `run` as `<time>-<quick|full>.json` (and `.svg` when it has a curve); returns the JSON's path. */
export function saveRun(run: RunFile): string {
  mkdirSync(resultsDir, { recursive: true });
  const stem = join(resultsDir, `${run.startedAt.replace(/[:.]/g, "-")}-${run.quick ? "quick" : "full"}`);
  writeFileSync(`${stem}.json`, `${JSON.stringify(run, null, 2)}\n`);
  const curve = run.figures.curve as CurvePoint[] | undefined;
  if (curve && curve.length > 0) writeFileSync(`${stem}.svg`, latencyChart(curve, run.startedAt));
  return `${stem}.json`;
}

/** A row's number: its `value`, or the first number in `measured`. */
function numberOf(row: Row): number | undefined {
  if (row.value !== undefined) return row.value;
  const m = /-?[\d,]*\.?\d+/.exec(row.measured);
  return m ? Number(m[0].replace(/,/g, "")) : undefined;
}

/** Prints, per metric found in both runs, the earlier and the current figure and the change. */
export function printComparison(earlierPath: string, current: RunFile): void {
  const earlier = JSON.parse(readFileSync(earlierPath, "utf8")) as RunFile;
  console.log(`\n== compared with ${earlierPath} (${earlier.startedAt}, ${earlier.quick ? "quick" : "full"}) ==`);
  const lines: string[][] = [["section", "metric", "earlier", "now", "change"]];
  for (const [section, rows] of Object.entries(current.sections)) {
    const before = new Map((earlier.sections[section] ?? []).map((r) => [r.metric, r]));
    for (const row of rows) {
      const old = before.get(row.metric);
      if (!old) continue;
      const a = numberOf(old);
      const b = numberOf(row);
      const change = a !== undefined && b !== undefined && a !== 0 ? `${b >= a ? "+" : ""}${fmt((100 * (b - a)) / Math.abs(a), 1)}%` : "";
      lines.push([section, row.metric, old.measured, row.measured, change]);
    }
  }
  if (lines.length === 1) {
    console.log("no metric in common");
    return;
  }
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => (l[i] as string).length)));
  for (const l of lines)
    console.log(
      l
        .map((c, i) => (i >= 2 ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number)))
        .join("  ")
        .trimEnd(),
    );
}

/** Median over rounds of one figure of a curve point. */
const medianOf = (p: CurvePoint, of: (r: CurvePoint["rounds"][number]) => number): number =>
  quantile(
    p.rounds.map(of).sort((a, b) => a - b),
    0.5,
  );

/** Latency (ms, log scale) against sessions: ours p50/p99, direct p99, added p99 (paired), the bare server's p99. */
export function latencyChart(curve: readonly CurvePoint[], title: string): string {
  const series = [
    { name: "ours p99", color: "#d62728", of: (r: CurvePoint["rounds"][number]) => r.ours.p99 },
    { name: "ours p50", color: "#ff9896", of: (r: CurvePoint["rounds"][number]) => r.ours.p50 },
    { name: "direct p99", color: "#1f77b4", of: (r: CurvePoint["rounds"][number]) => r.direct.p99 },
    { name: "added p99 (paired)", color: "#2ca02c", of: (r: CurvePoint["rounds"][number]) => r.added.p99 },
    { name: "bare connect-node p99", color: "#7f7f7f", of: (r: CurvePoint["rounds"][number]) => r.bare.p99 },
  ];
  const W = 640;
  const H = 400;
  const pad = { left: 60, right: 170, top: 40, bottom: 50 };
  const xs = curve.map((p) => p.sessions);
  const values = series.flatMap((s) => curve.map((p) => medianOf(p, s.of))).filter((v) => v > 0);
  const lo = Math.log10(Math.min(0.1, ...values));
  const hi = Math.log10(Math.max(10, ...values) * 1.2);
  const xMin = Math.min(...xs);
  const xMax = Math.max(...xs);
  const x = (s: number) => pad.left + ((W - pad.left - pad.right) * (s - xMin)) / Math.max(1, xMax - xMin);
  const y = (v: number) => H - pad.bottom - ((H - pad.top - pad.bottom) * (Math.log10(Math.max(v, 10 ** lo)) - lo)) / (hi - lo);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${pad.left}" y="20" font-size="14">delta latency vs sessions (${curve[0]?.rate ?? 0} deltas/s each), ${title}</text>`,
  ];
  for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) {
    const v = 10 ** e;
    out.push(`<line x1="${pad.left}" x2="${W - pad.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${pad.left - 6}" y="${y(v) + 4}" text-anchor="end">${v >= 1 ? v : v.toFixed(1)} ms</text>`);
  }
  for (const s of xs) {
    out.push(`<line x1="${x(s)}" x2="${x(s)}" y1="${pad.top}" y2="${H - pad.bottom}" stroke="#eee"/>`);
    out.push(`<text x="${x(s)}" y="${H - pad.bottom + 16}" text-anchor="middle">${s}</text>`);
  }
  out.push(`<text x="${(pad.left + W - pad.right) / 2}" y="${H - 12}" text-anchor="middle">sessions</text>`);
  // The target of the added latency.
  out.push(`<line x1="${pad.left}" x2="${W - pad.right}" y1="${y(5)}" y2="${y(5)}" stroke="#2ca02c" stroke-dasharray="4 4"/>`);
  series.forEach((s, i) => {
    const points = curve.map((p) => `${x(p.sessions).toFixed(1)},${y(medianOf(p, s.of)).toFixed(1)}`).join(" ");
    out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${points}"/>`);
    for (const p of curve) out.push(`<circle cx="${x(p.sessions).toFixed(1)}" cy="${y(medianOf(p, s.of)).toFixed(1)}" r="3" fill="${s.color}"/>`);
    const ly = pad.top + 10 + i * 18;
    out.push(`<line x1="${W - pad.right + 10}" x2="${W - pad.right + 30}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"/>`);
    out.push(`<text x="${W - pad.right + 36}" y="${ly + 4}">${s.name}</text>`);
  });
  out.push(`<text x="${W - pad.right + 10}" y="${pad.top + 10 + series.length * 18 + 4}" fill="#2ca02c">- - target added p99</text>`);
  out.push("</svg>\n");
  return out.join("\n");
}
