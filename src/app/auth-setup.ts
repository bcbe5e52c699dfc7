import { Authenticator, checkBindPolicy } from "../auth/index.ts";
import type { Store } from "../store/index.ts";
import { isLoopback, type Config } from "./config.ts";
import type { SessionLogger } from "../session/index.ts";

/**
 * Applies the startup rules of DESIGN.md (refuse a non-loopback bind without keys unless auth
 * is disabled explicitly; warn when running open) and builds the app's authenticator.
 * Throws `config_invalid` with the fix in its message.
 */
export async function createAuthenticator(
  config: Pick<Config, "host" | "auth">,
  store: Store,
  log: Pick<SessionLogger, "info" | "warn">,
): Promise<Authenticator> {
  const loopback = isLoopback(config.host);
  const { warning } = checkBindPolicy({
    host: config.host,
    loopback,
    mode: config.auth,
    keyCount: config.auth === "required" ? await store.countKeys() : 0,
  });
  if (warning) log.warn({ auth: config.auth, host: config.host }, warning);
  return new Authenticator({
    store,
    mode: config.auth,
    loopback,
    onTouchError: (err) => log.warn({ err }, "could not record API key use"),
    onOpenModeEnded: () => log.info({ auth: config.auth }, "an API key exists: open mode ended, every request now needs a key"),
  });
}
