import type { FastifyInstance, FastifyRequest } from "fastify";
import { RozError } from "../errors/index.ts";
import type { Principal } from "../domain/index.ts";
import type { ANY_SCOPE, Scope } from "./scopes.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The scope a REST route needs; routes without one (health, metrics, …) need no key. */
    scope?: Scope | typeof ANY_SCOPE;
  }
  interface FastifyRequest {
    /** Set by the auth hook on routes that declare `config.scope`. */
    principal?: Principal;
  }
}

export interface RestAuthOptions {
  authenticate(authorization: string | null, scope: string): Promise<Principal>;
  /** Throws `rate_limited` when the principal is over its REST budget. */
  rateLimit(principal: Principal): void;
}

/**
 * Authenticates every REST route that declares `config: { scope }`, before its body is read
 * (so a caller without a key gets 401, never a 400 or 415 about its body), then applies the
 * per-key rate limit. Connect routes declare no scope: the RPC handlers authenticate.
 */
export function registerRestAuth(app: FastifyInstance, opts: RestAuthOptions): void {
  app.addHook("onRequest", async (request) => {
    const scope = request.routeOptions.config.scope;
    if (scope === undefined) return;
    const principal = await opts.authenticate(request.headers.authorization ?? null, scope);
    request.principal = principal;
    opts.rateLimit(principal);
  });
}

/** The caller of a route that declares a scope. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new RozError("internal", "route has no auth scope");
  return request.principal;
}
