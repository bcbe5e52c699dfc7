/**
 * Shared helpers of the benchmark sections: options, clocks, statistics and the result
 * table. Nothing here measures anything by itself.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

/** What `npm run bench -- [--quick] [--profile] [section…]` asked for. */
export interface BenchOptions {
  /** The ~30 s version: fewer iterations, shorter windows. */
  quick: boolean;
  /** Run server children under `--cpu-prof` and print their hottest functions. */
  profile: boolean;
  /** Structured figures a section wants saved with the run (results.ts), by name. */
  figures: Record<string, unknown>;
}

/** `full` normally, `quick` with `--quick`. */
export const pick = <T>(options: BenchOptions, full: T, quick: T): T => (options.quick ? quick : full);

/** Milliseconds on the monotonic clock of this process (sub-millisecond resolution). */
export const now = (): number => performance.now();

/**
 * Milliseconds on CLOCK_MONOTONIC, which every process of the machine shares: a stamp
 * taken in the fake provider's process can be compared with an arrival in a client's.
 */
export const monoMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The value at quantile `q` (0..1) of `sorted` (ascending), nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

export interface Summary {
  n: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

/** p50/p99/mean/max of the samples (copied, then sorted). */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((s, x) => s + x, 0) / Math.max(1, sorted.length);
  return { n: sorted.length, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), mean, max: sorted.at(-1) ?? Number.NaN };
}

/** One line of a section's table; `ok` set means the line has a target (OK/MISS). */
export interface Row {
  metric: string;
  target?: string;
  measured: string;
  ok?: boolean;
  note?: string;
  /** The number `--compare` compares (default: the first number in `measured`). */
  value?: number;
}

/** Prints a section's rows as an aligned table with an OK/MISS column. */
export function printTable(title: string, rows: readonly Row[]): void {
  const cells = rows.map((r) => [r.metric, r.target ?? "", r.measured, r.ok === undefined ? "" : r.ok ? "OK" : "MISS", r.note ?? ""]);
  const head = ["metric", "target", "measured", "", "note"];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)));
  const line = (c: string[]) =>
    c
      .map((s, i) => (i === 2 ? s.padStart(widths[i] as number) : s.padEnd(widths[i] as number)))
      .join("  ")
      .trimEnd();
  console.log(`\n== ${title} ==`);
  console.log(line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const c of cells) console.log(line(c));
}

/** Formats a number with thousands separators and `digits` decimals. */
export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "n/a";

export const ms = (n: number): string => `${fmt(n, 2)} ms`;
export const perSecond = (n: number): string => `${fmt(n)}/s`;
export const ratio = (n: number): string => fmt(n, 2);

/** Prints a progress line with the seconds since the process started (to stderr: the tables on stdout stay clean). */
export const progress = (text: string): void => void process.stderr.write(`  .. [${(now() / 1000).toFixed(0).padStart(3)} s] ${text}\n`);

/** A fresh temporary folder and its removal. */
export async function tempDir(prefix: string): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/**
 * Runs `task(i)` for i in 0..count-1 with at most `limit` running at once; resolves with
 * the results in index order, rejects with the first failure.
 */
export async function mapLimit<T>(count: number, limit: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results = new Array<T>(count);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  return results;
}

/** Runs `body` until `durationMs` has passed, counting completed iterations. */
export async function countFor(durationMs: number, body: () => Promise<void>): Promise<number> {
  const end = now() + durationMs;
  let n = 0;
  while (now() < end) {
    await body();
    n++;
  }
  return n;
}

/** Rejects with `what` if `promise` does not settle within `timeoutMs`. */
export function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
