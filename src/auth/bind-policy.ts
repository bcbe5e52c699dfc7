import { RozError } from "../errors/index.ts";
import type { AuthMode } from "./authenticator.ts";

export interface BindPolicyInput {
  host: string;
  loopback: boolean;
  mode: AuthMode;
  /** Keys ever created (revoked ones included). */
  keyCount: number;
}

/**
 * Decides whether the server may listen on `host` with this auth setup (DESIGN.md: a
 * non-loopback address without keys refuses to start unless auth is disabled explicitly).
 * Throws `config_invalid` with the fix in its message; otherwise returns the warning to log
 * at startup, if any.
 */
export function checkBindPolicy(input: BindPolicyInput): { warning?: string } {
  const { host, loopback, mode } = input;
  if (mode === "disabled") {
    if (loopback) return { warning: `authentication is disabled (ROZ_AUTH=disabled): every request acts as tenant "default"` };
    // ROZ_AUTH=disabled is the explicit opt-in (the default is `required`); say it loudly.
    return {
      warning: `authentication is disabled (ROZ_AUTH=disabled) on the non-loopback address ${host}: anyone who can reach it has full access`,
    };
  }
  if (input.keyCount > 0) return {};
  if (!loopback) {
    throw new RozError(
      "config_invalid",
      `refusing to listen on the non-loopback address ${host} without any API key: create one first with ` +
        `"roz keys create --tenant NAME" (same ROZ_DATA_DIR / DATABASE_URL), or set ROZ_AUTH=disabled to run ` +
        `open on purpose`,
    );
  }
  return {
    warning:
      `no API key exists yet: the server runs OPEN on ${host} (every request acts as tenant "default") until ` +
      `the first key is created with "roz keys create --tenant NAME" or POST /v1/auth/keys`,
  };
}
