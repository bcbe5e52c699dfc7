import { createHash, randomBytes } from "node:crypto";

/** Every secret starts with this, so that leaked keys are easy to scan for. */
const KEY_PREFIX = "roz_sk_";

/** `roz_sk_` + base64url of 32 random bytes (43 characters, no padding). */
const KEY_SHAPE = /^roz_sk_[A-Za-z0-9_-]{43}$/;

/** How many characters of the secret are kept in clear, to recognise a key in listings. */
const SHOWN_CHARS = KEY_PREFIX.length + 6;

/** A freshly made secret: shown to its owner once; only `hash` and `prefix` are stored. */
export interface NewSecret {
  secret: string;
  prefix: string;
  hash: string;
}

/** The SHA-256 (hex) of a secret: what the store keeps and looks keys up by. */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** Makes a new random key. */
export function newSecret(): NewSecret {
  const secret = KEY_PREFIX + randomBytes(32).toString("base64url");
  return { secret, prefix: secret.slice(0, SHOWN_CHARS), hash: hashSecret(secret) };
}

/** True when `text` has the shape of a key (cheap check before any lookup). */
export function looksLikeSecret(text: string): boolean {
  return KEY_SHAPE.test(text);
}

/**
 * The credential of an `authorization` header (`Bearer roz_sk_…`, scheme case-insensitive);
 * undefined when the header is absent or not a bearer token.
 */
export function bearerToken(authorization: string | null | undefined): string | undefined {
  if (!authorization) return undefined;
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization);
  return m?.[1];
}
