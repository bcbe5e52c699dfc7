/**
 * The parsers of the settings table (src/app/config.ts): each turns a variable's text into its
 * value or fails naming the variable, so a bad value stops the server with a clear message.
 */
import { RozError } from "../errors/index.ts";

/** How a setting is parsed; every parser names the variable in its error. */
export type Parser<T> = (raw: string, name: string) => T;

export interface Setting<T> {
  env: string;
  description: string;
  /** Shown by `--help`; `undefined` means unset. */
  defaultText: string;
  parse: Parser<T>;
  default: T;
}

export const fail = (name: string, message: string): never => {
  throw new RozError("config_invalid", `${name}: ${message}`);
};

export const str: Parser<string> = (raw) => raw;
export const optStr: Parser<string | undefined> = (raw) => (raw === "" ? undefined : raw);
export const int =
  (min: number, max: number): Parser<number> =>
  (raw, name) => {
    if (!/^\d+$/.test(raw.trim())) return fail(name, `expected a whole number, got "${raw}"`);
    const n = Number(raw.trim());
    if (n < min || n > max) return fail(name, `must be between ${min} and ${max}, got ${n}`);
    return n;
  };
export const oneOf =
  <T extends string>(...values: T[]): Parser<T> =>
  (raw, name) =>
    (values as string[]).includes(raw.trim()) ? (raw.trim() as T) : fail(name, `expected one of ${values.join(", ")}, got "${raw}"`);
export const list: Parser<string[]> = (raw) =>
  raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
export const bytes: Parser<number> = (raw, name) => {
  const m = /^(\d+)\s*(b|kib|kb|mib|mb|gib|gb)?$/i.exec(raw.trim());
  if (!m) return fail(name, `expected a size such as 4194304 or 4MiB, got "${raw}"`);
  const unit = (m[2] ?? "b").toLowerCase();
  const mult = unit.startsWith("k") ? 1024 : unit.startsWith("m") ? 1024 ** 2 : unit.startsWith("g") ? 1024 ** 3 : 1;
  const n = Number(m[1]) * mult;
  if (n < 1024) return fail(name, `must be at least 1 KiB, got ${n} bytes`);
  return n;
};

/** A positive number of days, fractions allowed; empty is unset. */
export const optDays: Parser<number | undefined> = (raw, name) => {
  const days = raw.trim() === "" ? undefined : Number(raw);
  return days === undefined || (/^\d+(\.\d+)?$/.test(raw.trim()) && days > 0) ? days : fail(name, `expected a positive number of days, got "${raw}"`);
};
/** Only PostgreSQL URLs: anything else used to surface as a DNS error (`getaddrinfo ENOTFOUND base`). */
export const postgresUrl: Parser<string | undefined> = (raw, name) => {
  if (raw === "") return undefined;
  // The value may hold a password: messages show only its scheme.
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)?.[1];
  if (scheme === undefined) return fail(name, "expected a postgres:// or postgresql:// URL, got a value without a URL scheme");
  if (!/^postgres(ql)?$/i.test(scheme)) return fail(name, `expected a postgres:// or postgresql:// URL, got a "${scheme}:" URL`);
  if (!URL.canParse(raw)) return fail(name, `not a valid URL (expected postgres://user:password@host:port/database)`);
  return raw;
};

/** An absolute http(s) URL without query or fragment; a trailing slash is dropped. */
export const httpUrl: Parser<string | undefined> = (raw, name) => {
  if (raw === "") return undefined;
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || url.search !== "" || url.hash !== "" || url.username !== "") {
    return fail(name, "expected an http:// or https:// URL without query, fragment or user");
  }
  return url.href.replace(/\/+$/, "");
};

export const setting = <T>(env: string, def: T, parse: Parser<T>, description: string, defaultText?: string): Setting<T> => ({
  env,
  description,
  default: def,
  parse,
  defaultText: defaultText ?? (def === undefined ? "unset" : Array.isArray(def) ? def.join(",") || "none" : String(def)),
});
