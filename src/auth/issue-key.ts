import type { ApiKey, Store } from "../store/index.ts";
import { newSecret } from "./api-keys.ts";

/** A key just created: the stored record plus the secret, which is never retrievable again. */
export interface IssuedKey {
  key: ApiKey;
  secret: string;
}

/** Creates a key for `tenantId` (scopes already checked by the caller). */
export async function issueKey(
  store: Pick<Store, "createKey">,
  input: { tenantId: string; name: string; scopes: string[]; expiresAt?: number },
): Promise<IssuedKey> {
  const { secret, prefix, hash } = newSecret();
  const key = await store.createKey({ ...input, prefix, hash });
  return { key, secret };
}

/** Replaces key `id` by a new secret (same name, scopes, expiry); undefined when unknown or revoked. */
export async function rotateIssuedKey(store: Pick<Store, "rotateKey">, tenantId: string, id: string): Promise<IssuedKey | undefined> {
  const { secret, prefix, hash } = newSecret();
  const key = await store.rotateKey(tenantId, id, { prefix, hash });
  return key && { key, secret };
}
