import { describe, expect, it } from "vitest";
import { ModelError } from "../../src/models/index.ts";
import { toModelError } from "../../src/models/classify-error.ts";
import { parseRetryAfter } from "../../src/models/retry-after.ts";
import { backoffDelay, defaultRetryOptions, retryingStream } from "../../src/models/retry.ts";

describe("parseRetryAfter", () => {
  const now = Date.parse("2030-01-01T00:00:00Z");
  it.each([
    [{ "retry-after": "2" }, 2000],
    [{ "retry-after": "0.5" }, 500],
    [{ "retry-after-ms": "150", "retry-after": "9" }, 150],
    [{ "retry-after": "Tue, 01 Jan 2030 00:00:03 GMT" }, 3000],
    [{ "retry-after": "Mon, 31 Dec 2029 23:00:00 GMT" }, 0],
    [{ "retry-after": "soon" }, undefined],
    [{ "retry-after": "-1" }, undefined],
    [{}, undefined],
  ])("%j → %s ms", (headers, expected) => {
    expect(parseRetryAfter(new Headers(headers), now)).toBe(expected);
  });
});

describe("backoffDelay", () => {
  it("doubles per retry within [ceiling/2, ceiling] and is capped", () => {
    const options = { ...defaultRetryOptions, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffDelay(0, options, () => 0)).toBe(50);
    expect(backoffDelay(0, options, () => 1)).toBe(100);
    expect(backoffDelay(2, options, () => 1)).toBe(400);
    expect(backoffDelay(10, options, () => 1)).toBe(1000);
    expect(backoffDelay(10, options, () => 0)).toBe(500);
  });
});

describe("toModelError", () => {
  it("keeps ModelErrors, and makes unknown errors non-retryable", () => {
    const original = new ModelError("x", { retryable: true, status: 503 });
    expect(toModelError(original)).toBe(original);
    expect(toModelError(new RangeError("bug"))).toMatchObject({ retryable: false, reason: "model_error" });
  });

  it("treats undici network failures as retryable", () => {
    expect(toModelError(new TypeError("terminated"))).toMatchObject({ retryable: true });
    const refused = Object.assign(new Error("connect"), { code: "ECONNREFUSED" });
    expect(toModelError(new TypeError("fetch failed", { cause: refused }))).toMatchObject({ retryable: true });
  });
});

describe("retryingStream", () => {
  const fast = { retries: 2, baseDelayMs: 1, maxDelayMs: 2 };
  const signal = new AbortController().signal;

  it("re-runs an attempt that failed before yielding, up to the limit", async () => {
    let attempts = 0;
    const results: number[] = [];
    for await (const value of retryingStream(
      async function* () {
        attempts++;
        if (attempts < 3) throw new ModelError("busy", { retryable: true, status: 503 });
        yield attempts;
      },
      signal,
      fast,
    )) {
      results.push(value);
    }
    expect(results).toEqual([3]);
  });

  it("throws at once after a first value was yielded", async () => {
    let attempts = 0;
    const seen: string[] = [];
    const run = async () => {
      for await (const value of retryingStream(
        async function* () {
          attempts++;
          yield "a";
          throw new ModelError("cut", { retryable: true });
        },
        signal,
        fast,
      )) {
        seen.push(value);
      }
    };
    await expect(run()).rejects.toMatchObject({ message: "cut" });
    expect(attempts).toBe(1);
    expect(seen).toEqual(["a"]);
  });
});
