import { RozError } from "../errors/index.ts";
import type { Principal } from "../domain/index.ts";
import type { Store } from "../store/index.ts";
import { bearerToken, hashSecret, looksLikeSecret } from "./api-keys.ts";
import { requireScope, SCOPES } from "./scopes.ts";

/** A key found by its secret, with its tenant. */
type FoundKey = NonNullable<Awaited<ReturnType<Store["findKeyByHash"]>>>;

/** `ROZ_AUTH`. */
export type AuthMode = "required" | "disabled";

/** The tenant every open-mode request acts as. */
const OPEN_TENANT = "default";

/** How often, at most, "no key exists yet" is re-counted while the server runs open. */
const DEFAULT_RECHECK_MS = 2_000;

/** `last_used_at` is a coarse "in use lately": one store write per key per minute is plenty. */
const TOUCH_INTERVAL_MS = 60_000;

export interface AuthenticatorOptions {
  store: Pick<Store, "findKeyByHash" | "countKeys" | "ensureTenant" | "touchKey">;
  mode: AuthMode;
  /** Bound to a loopback address: with mode `required` the server runs open until a key exists. */
  loopback: boolean;
  recheckMs?: number;
  now?: () => number;
  /** Receives failures of the best-effort `last_used_at` update. */
  onTouchError?: (err: unknown) => void;
  /** Called once when a server that served requests open starts requiring keys (the first key exists). */
  onOpenModeEnded?: () => void;
}

/**
 * Resolves `authorization: Bearer roz_sk_…` to a principal, for REST and RPC alike.
 *
 * Open mode (every caller is the `default` tenant with every scope, credentials ignored):
 * `ROZ_AUTH=disabled`, or a loopback server while no key was ever created. Creating the first
 * key closes it: at once through `keysChanged()` (REST), else at the next re-count, at most
 * `recheckMs` later (a key made by the CLI in another process), or at the first request
 * that carries an existing key. Keys are never deleted, so once closed the server stays closed.
 */
export class Authenticator {
  readonly #opts: AuthenticatorOptions;
  readonly #now: () => number;
  #closed: boolean;
  #openUntil = 0;
  #counting: Promise<boolean> | undefined;
  #openPrincipal: Promise<Principal> | undefined;
  /** Whether a request was served open (then closing is worth a log line). */
  #servedOpen = false;
  /** When this process last recorded each key's use; reset when it grows large. */
  readonly #touched = new Map<string, number>();
  readonly #revocations = new Map<string, number>();
  readonly #revocationListeners = new Set<(keyId: string) => void>();

  constructor(opts: AuthenticatorOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#closed = opts.mode === "required" && !opts.loopback;
  }

  /**
   * The principal of a request that needs `scope`. Throws `unauthenticated` for a missing,
   * malformed, unknown, revoked or expired key and `permission_denied` for a missing scope.
   */
  async authenticate(authorization: string | null | undefined, scope: string): Promise<Principal> {
    const token = bearerToken(authorization);
    if (await this.isOpen()) {
      // A request with a key that exists ends open mode at once: it acts as the key's tenant
      // and counts as the key's use, rather than running open until the next re-count.
      const existing = this.#opts.mode === "required" && token !== undefined && looksLikeSecret(token) ? await this.#find(token) : undefined;
      if (existing === undefined) return this.#open();
      this.#close();
      return this.#principal(existing, scope);
    }
    if (token === undefined) throw new RozError("unauthenticated", "missing credentials: send authorization: Bearer roz_sk_…");
    if (!looksLikeSecret(token)) throw new RozError("unauthenticated", "malformed API key");
    const found = await this.#find(token);
    if (!found) throw new RozError("unauthenticated", "unknown, revoked or expired API key");
    return this.#principal(found, scope);
  }

  #find(token: string): Promise<FoundKey | undefined> {
    return this.#opts.store.findKeyByHash(hashSecret(token), this.#now());
  }

  /** The principal of a found key, if it has `scope`; its use is recorded. */
  #principal(found: FoundKey, scope: string): Principal {
    const principal: Principal = { tenantId: found.tenant.id, keyId: found.key.id, scopes: found.key.scopes };
    requireScope(principal, scope);
    this.#touch(found.key.id);
    return principal;
  }

  /** Whether requests are currently served without credentials. */
  async isOpen(): Promise<boolean> {
    if (this.#opts.mode === "disabled") return true;
    if (this.#closed) return false;
    if (this.#now() < this.#openUntil) return true;
    // One count at a time, shared by every request that arrives meanwhile.
    this.#counting ??= this.#opts.store.countKeys().then(
      (n) => {
        this.#counting = undefined;
        if (n > 0) this.#close();
        else this.#openUntil = this.#now() + (this.#opts.recheckMs ?? DEFAULT_RECHECK_MS);
        return n === 0;
      },
      (err: unknown) => {
        this.#counting = undefined;
        throw err;
      },
    );
    return this.#counting;
  }

  /** A key was created: leave open mode now (required mode only). */
  keysChanged(): void {
    if (this.#opts.mode === "required") this.#close();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#servedOpen) this.#opts.onOpenModeEnded?.();
  }

  /** Key `keyId` (or, rotated, its old secret) stopped working through this process. */
  keyRevoked(keyId: string): void {
    this.#revocations.set(keyId, this.revocationsOf(keyId) + 1);
    for (const listener of this.#revocationListeners) listener(keyId);
  }

  /** Calls `listener` with the key id after each `keyRevoked()`; returns the unsubscribe. */
  onRevocation(listener: (keyId: string) => void): () => void {
    this.#revocationListeners.add(listener);
    return () => this.#revocationListeners.delete(listener);
  }

  /** How often key `keyId` was revoked or rotated through this process: a change tells its open streams to re-check it now. */
  revocationsOf(keyId: string): number {
    return this.#revocations.get(keyId) ?? 0;
  }

  #touch(keyId: string): void {
    const now = this.#now();
    if (now - (this.#touched.get(keyId) ?? -Infinity) < TOUCH_INTERVAL_MS) return;
    if (this.#touched.size >= 10_000) this.#touched.clear();
    this.#touched.set(keyId, now);
    this.#opts.store.touchKey(keyId, now).catch((err: unknown) => this.#opts.onTouchError?.(err));
  }

  #open(): Promise<Principal> {
    this.#servedOpen = true;
    this.#openPrincipal ??= this.#opts.store.ensureTenant(OPEN_TENANT).then(
      (tenant) => ({ tenantId: tenant.id, scopes: [...SCOPES] }),
      (err: unknown) => {
        this.#openPrincipal = undefined;
        throw err;
      },
    );
    return this.#openPrincipal;
  }
}
