import { readFileSync } from "node:fs";
import { RozError } from "../errors/index.ts";
import type { Config } from "./config.ts";

/**
 * Startup failures as one line for the operator (`roz: …`, exit code 2): the setting at
 * fault and the cause, never a stack trace. Values that may hold secrets (the password in
 * `DATABASE_URL`) are left out.
 */

/** The store could not be opened: PostgreSQL unreachable or refusing, or the data dir unwritable. */
export function storeOpenFailure(err: unknown, config: Config): RozError {
  if (err instanceof RozError) return err;
  if (config.databaseUrl !== undefined) {
    return new RozError("startup_failed", `DATABASE_URL: cannot use PostgreSQL at ${postgresTarget(config.databaseUrl)}: ${causeOf(err)}`, {
      cause: err,
    });
  }
  return new RozError("startup_failed", `ROZ_DATA_DIR: cannot write the embedded database in "${config.dataDir}": ${causeOf(err)}`, {
    cause: err,
  });
}

/** The one port could not be bound. */
export function listenFailure(err: unknown, config: Config): RozError {
  const code = (err as { code?: unknown } | null)?.code;
  const where = `${config.host}:${config.port}`;
  const message =
    code === "EADDRINUSE"
      ? `ROZ_PORT: port ${config.port} is already in use on ${config.host} (another roz or another program listens there)`
      : code === "EACCES"
        ? `ROZ_PORT: not allowed to listen on ${where} (ports below 1024 need privileges)`
        : code === "EADDRNOTAVAIL" || code === "ENOTFOUND"
          ? `ROZ_HOST: ${config.host} is not an address of this machine`
          : `ROZ_HOST/ROZ_PORT: cannot listen on ${where}: ${causeOf(err)}`;
  return new RozError("startup_failed", message, { cause: err });
}

/** Reads the file a setting names (a TLS certificate or key); failing, one line naming the setting. */
export function readSettingFile(variable: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new RozError("startup_failed", `${variable}: cannot read "${path}": ${causeOf(err)}`, { cause: err });
  }
}

/** `host:port/database` of a PostgreSQL URL, without user or password. */
function postgresTarget(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || "5432"}${u.pathname}`;
}

/** A short cause: the error's message, or the first of an AggregateError's (pg on dual-stack hosts). */
function causeOf(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0 && err.message === "") return causeOf(err.errors[0]);
  if (err instanceof Error) return err.message;
  return String(err);
}
