import { createHash } from "node:crypto";

/**
 * The signature the fake gives a thinking block: bound to its text, so the fake can reject
 * a block sent back without its signature or with its text changed, as the real API does.
 */
export function fakeSignature(thinking: string): string {
  return `fakesig_${createHash("sha256").update(thinking).digest("base64url")}`;
}
