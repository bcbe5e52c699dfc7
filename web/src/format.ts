import type { Usage } from "./api/rest.ts";

export const num = (n: number): string => n.toLocaleString("en-US");

export const tokens = (u: Usage): string => `${num(u.input_tokens)} in / ${num(u.output_tokens)} out`;

/** US dollars: cents from one cent up, two significant digits below it (a cheap turn is not "$0.00"). */
export const usd = (n: number): string => (n === 0 ? "$0" : n < 0.01 ? `$${n.toPrecision(2)}` : `$${n.toFixed(2)}`);

/** "12 s ago", "3 min ago", or the date for older times. */
export function ago(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(iso).toISOString().slice(0, 10);
}

export const json = (v: unknown): string => JSON.stringify(v ?? {}, null, 2);

/** A length of time: "850 ms", "12 s", "3 min 5 s", "2 h 3 min". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ""}`;
  return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ""}`;
}
