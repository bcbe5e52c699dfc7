import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { RozError } from "../errors/index.ts";

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = "v1:";

/**
 * The 32-byte key of `ROZ_SECRET_KEY`, written as 64 hex characters or as base64; undefined
 * for anything else (the configuration refuses to start with it).
 */
export function parseSecretKey(raw: string): Buffer | undefined {
  const text = raw.trim();
  if (/^[0-9a-f]{64}$/i.test(text)) return Buffer.from(text, "hex");
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return undefined;
  const bytes = Buffer.from(text, text.includes("-") || text.includes("_") ? "base64url" : "base64");
  return bytes.length === KEY_BYTES ? bytes : undefined;
}

/**
 * Seals credentials at rest with AES-256-GCM. The associated data binds a sealed value to its
 * owner (tenant and server name), so a value copied into another row does not open.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== KEY_BYTES) throw new RozError("config_invalid", "the secret key must be 32 bytes");
    this.#key = key;
  }

  seal(plain: string, owner: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    cipher.setAAD(Buffer.from(owner));
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return VERSION + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
  }

  /** Throws `internal` when the value was sealed with another key or for another owner. */
  open(sealed: string, owner: string): string {
    if (!sealed.startsWith(VERSION)) throw new RozError("internal", "sealed credentials of an unknown format");
    const bytes = Buffer.from(sealed.slice(VERSION.length), "base64");
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(owner));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch (err) {
      throw new RozError("internal", "stored credentials do not open with this ROZ_SECRET_KEY", { cause: err });
    }
  }
}
