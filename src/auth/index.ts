/**
 * Authentication: API keys (`roz_sk_…`, stored hashed), scopes, the open-mode rules and the
 * REST auth hook. `src/app` wires it; routes use `principalOf`.
 */
export { bearerToken, hashSecret, looksLikeSecret, newSecret, type NewSecret } from "./api-keys.ts";
export { Authenticator, type AuthenticatorOptions, type AuthMode } from "./authenticator.ts";
export { checkBindPolicy, type BindPolicyInput } from "./bind-policy.ts";
export { issueKey, rotateIssuedKey, type IssuedKey } from "./issue-key.ts";
export { principalOf, registerRestAuth, type RestAuthOptions } from "./rest-auth.ts";
export { ANY_SCOPE, grantableScopes, requireScopesHeld, SCOPES, type Scope } from "./scopes.ts";
