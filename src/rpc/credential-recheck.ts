import { RozError, toRozError } from "../errors/index.ts";
import type { RpcAuthenticator } from "./context-values.ts";

/** What the re-check needs of a session call's dependencies (see `StreamSessionDeps`). */
export interface CredentialRecheckDeps {
  authenticate: RpcAuthenticator;
  credentialRecheckMs?: number;
  revocationsOf?: (keyId: string) => number;
}

/**
 * The re-check of a stream's credentials before each request (at most every
 * `credentialRecheckMs`, and at once after a key was revoked or rotated through this process):
 * undefined when no check is due (the common case, answered without a promise), else resolves
 * with the `unauthenticated` error once the key was revoked, expired or lost its scope, or
 * undefined. A failure of the store itself does not end the stream (the request will meet the
 * same store anyway).
 */
export function credentialCheck(
  deps: CredentialRecheckDeps,
  authorization: string | null,
  keyId: string | undefined,
): () => Promise<RozError | undefined> | undefined {
  const every = deps.credentialRecheckMs;
  const revocations = (): number => (keyId === undefined ? 0 : (deps.revocationsOf?.(keyId) ?? 0));
  let checkedAt = Date.now();
  let revocationsSeen = revocations();
  const check = async (): Promise<RozError | undefined> => {
    // Taken before the lookup: a revocation while it runs makes the next request check again.
    revocationsSeen = revocations();
    try {
      await deps.authenticate(authorization, "sessions");
      checkedAt = Date.now();
      return undefined;
    } catch (err) {
      const error = toRozError(err);
      if (error.code !== "unauthenticated" && error.code !== "permission_denied") return undefined;
      return new RozError("unauthenticated", `${error.message}: this stream's credentials are no longer valid`);
    }
  };
  return () => (every === undefined || (Date.now() - checkedAt < every && revocations() === revocationsSeen) ? undefined : check());
}
