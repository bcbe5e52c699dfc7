/** Pino's numeric levels, as the readable format names them. */
const levelNames: Record<number, string> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };
const levelColours: Record<number, string> = { 10: "90", 20: "36", 30: "32", 40: "33", 50: "31", 60: "35" };
/** Fields the line's prefix shows, or that are the same on every line (pid, host). */
const prefixed = new Set(["level", "time", "msg", "pid", "hostname"]);

const value = (v: unknown): string => (typeof v === "string" ? (/[\s"=]/.test(v) || v === "" ? JSON.stringify(v) : v) : JSON.stringify(v));
const two = (n: number): string => String(n).padStart(2, "0");

/** Local wall-clock time with milliseconds. */
function clock(ms: number): string {
  const d = new Date(ms);
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

/** A request line's `req`, `res` and `responseTime` as `GET /v1/sessions 200 3.1 ms`. */
function requestWords(entry: Record<string, unknown>): string[] {
  const req = entry["req"] as { method?: string; url?: string } | undefined;
  const res = entry["res"] as { statusCode?: number } | undefined;
  const took = entry["responseTime"];
  return [
    ...(req?.method && req.url ? [`${req.method} ${req.url}`] : []),
    ...(res?.statusCode !== undefined ? [String(res.statusCode)] : []),
    ...(typeof took === "number" ? [`${took.toFixed(1)} ms`] : []),
  ];
}

/**
 * One pino JSON line as a line for people: `HH:MM:SS.mmm LEVEL message key=value …` (a
 * request as `GET /path 200 1.2 ms`), with an error's stack below it. Anything that is not a
 * JSON object is passed on as it is.
 */
export function readableLine(json: string, colour = false): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith("\n") ? json : `${json}\n`;
  }
  const level = Number(entry["level"]);
  const name = (levelNames[level] ?? String(entry["level"])).padEnd(5);
  const words = [String(entry["msg"] ?? ""), ...requestWords(entry)];
  let stack = "";
  for (const [key, v] of Object.entries(entry)) {
    if (prefixed.has(key) || key === "req" || key === "res" || key === "responseTime" || v === undefined) continue;
    if (key === "err" && typeof v === "object" && v !== null) {
      const err = v as { message?: string; stack?: string };
      words.push(`err=${value(err.message ?? "")}`);
      stack = err.stack ? `\n    ${err.stack.split("\n").join("\n    ")}` : "";
    } else words.push(`${key}=${value(v)}`);
  }
  const label = colour ? `\u001b[${levelColours[level] ?? "0"}m${name}\u001b[0m` : name;
  return `${clock(Number(entry["time"]))} ${label} ${words.join(" ")}${stack}\n`;
}

/** A pino destination writing readable lines to `out` (coloured on a terminal, unless NO_COLOR is set). */
export function readableLog(out: NodeJS.WriteStream = process.stdout): { write(line: string): void } {
  const colour = out.isTTY === true && process.env["NO_COLOR"] === undefined;
  return { write: (line: string) => void out.write(readableLine(line, colour)) };
}
