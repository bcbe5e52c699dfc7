import { RozError } from "../errors/index.ts";

/**
 * The scopes a key can carry. `admin` implies every other scope. The list is part of the
 * API (keys are created with these names): only add to it.
 */
export const SCOPES = ["sessions", "tasks", "environments", "keys", "mcp", "admin"] as const;

export type Scope = (typeof SCOPES)[number];

/** What a request asks of a key: a scope, or `any` (any valid key of the tenant). */
export const ANY_SCOPE = "any";

/** Whatever carries scopes: a principal, a stored key. */
interface Scoped {
  readonly scopes: readonly string[];
}

/** True when `who` may act under `scope` (it holds it, or holds `admin`). */
function hasScope(who: Scoped, scope: string): boolean {
  return who.scopes.includes("admin") || who.scopes.includes(scope);
}

/** Throws `permission_denied` naming the scope unless `who` holds it. */
export function requireScope(who: Scoped, scope: string): void {
  if (scope !== ANY_SCOPE && !hasScope(who, scope)) throw new RozError("permission_denied", `this key lacks the "${scope}" scope`);
}

/**
 * Checks that `granter` may hand out `scopes` (a key cannot grant what it does not have;
 * only `admin` may grant `admin`). Returns the scopes sorted and without duplicates.
 */
export function grantableScopes(granter: Scoped, scopes: readonly string[]): string[] {
  const wanted = [...new Set(scopes)].sort();
  for (const scope of wanted) {
    if (!(SCOPES as readonly string[]).includes(scope)) {
      throw new RozError("invalid_argument", `unknown scope "${scope}" (expected one of ${SCOPES.join(", ")})`);
    }
  }
  if (wanted.length === 0) throw new RozError("invalid_argument", "a key needs at least one scope");
  requireScopesHeld(granter, wanted, "grant");
  return wanted;
}

/**
 * Throws `permission_denied` unless `who` holds every one of `scopes` (`admin` holds all):
 * a key may only create, revoke or rotate keys whose scopes it holds itself.
 */
export function requireScopesHeld(who: Scoped, scopes: readonly string[], action: "grant" | "revoke" | "rotate"): void {
  for (const scope of scopes) {
    if (hasScope(who, scope)) continue;
    const what = action === "grant" ? `cannot grant the "${scope}" scope` : `cannot ${action} a key with the "${scope}" scope`;
    throw new RozError("permission_denied", `${what}: the calling key does not have it`);
  }
}
