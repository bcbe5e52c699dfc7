import { RozError } from "../errors/index.ts";
import type { Principal } from "../session/index.ts";

/** The answer of `RateLimiter.take`: allowed, or refused with the wait until a token is back. */
export type RateVerdict = { ok: true } | { ok: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Token buckets keyed by caller: each holds up to `perMinute` tokens (the burst) and refills
 * at `perMinute` per minute. `perMinute` 0 turns the limit off. Buckets idle long enough to
 * be full again are dropped, so memory follows the number of recent callers.
 */
export class RateLimiter {
  readonly #perMinute: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();
  #lastSweep: number;

  constructor(perMinute: number, now: () => number = Date.now) {
    this.#perMinute = perMinute;
    this.#now = now;
    this.#lastSweep = now();
  }

  /** Takes one token for `key`; when none is left, says how long until one is. */
  take(key: string): RateVerdict {
    if (this.#perMinute <= 0) return { ok: true };
    const now = this.#now();
    this.#sweep(now);
    const perMs = this.#perMinute / 60_000;
    const bucket = this.#buckets.get(key) ?? { tokens: this.#perMinute, at: now };
    bucket.tokens = Math.min(this.#perMinute, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)) };
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < 60_000) return;
    this.#lastSweep = now;
    for (const [key, bucket] of this.#buckets) if (now - bucket.at >= 60_000) this.#buckets.delete(key);
  }
}

/** Whose budget a request spends: its key, or its tenant in open mode (no key). */
function rateKey(principal: Principal): string {
  return principal.keyId !== undefined ? `key:${principal.keyId}` : `tenant:${principal.tenantId}`;
}

/** The per-key limits of one app: REST requests and session starts. */
export interface RateLimits {
  /** Throws `rate_limited` (HTTP 429 with `retry-after`) when over the REST budget. */
  rest(principal: Principal): void;
  /** `SessionDeps.allowSessionStart`: false when over the session budget. */
  allowSessionStart(principal: Principal): boolean;
}

/** Builds both limiters from the settings (each off at 0); `now` is for tests. */
export function createRateLimits(settings: { rateLimitPerMinute: number; sessionRateLimitPerMinute: number }, now?: () => number): RateLimits {
  const rest = new RateLimiter(settings.rateLimitPerMinute, now);
  const sessions = new RateLimiter(settings.sessionRateLimitPerMinute, now);
  return {
    rest(principal) {
      const verdict = rest.take(rateKey(principal));
      if (!verdict.ok) {
        throw new RozError(
          "rate_limited",
          `rate limit of ${settings.rateLimitPerMinute} requests per minute exceeded; retry in ${verdict.retryAfterSeconds} s`,
          {
            details: { retry_after_seconds: verdict.retryAfterSeconds },
          },
        );
      }
    },
    allowSessionStart(principal) {
      return sessions.take(rateKey(principal)).ok;
    },
  };
}
