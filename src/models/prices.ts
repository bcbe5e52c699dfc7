/**
 * A provider's `prices` in the providers file: a map from model id (or `"*"`, every other
 * model of the provider) to USD per million tokens:
 *
 * ```yaml
 * prices:
 *   gpt-4.1-mini: { input: 0.4, output: 1.6, cache_read: 0.1, cache_write: 0.4 }
 *   "*": { input: 2, output: 8 }   # cache_read and cache_write default to input
 * ```
 */
import { isPlainObject } from "./plain-object.ts";
import type { ModelPrice } from "./types.ts";

type Fail = (field: string, message: string) => never;

const priceFields = { input: "input", output: "output", cache_read: "cacheRead", cache_write: "cacheWrite" } as const;

/**
 * Validates `value` (undefined: no prices). A model id must be one of `models` when the
 * provider lists them; an alias stands for its model. Every error names the field.
 */
export function parsePrices(value: unknown, models: readonly string[], aliases: Record<string, string>, fail: Fail): Record<string, ModelPrice> | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) fail("prices", 'must be a map from model id (or "*") to {input, output, cache_read, cache_write}');
  const prices: Record<string, ModelPrice> = {};
  for (const [key, entry] of Object.entries(value as Record<string, unknown>)) {
    const field = `prices.${key}`;
    const model = Object.hasOwn(aliases, key) ? aliases[key]! : key;
    if (key === "") fail(field, 'a model id may not be empty (use "*" for every model)');
    if (key !== "*" && models.length > 0 && !models.includes(model)) fail(field, `"${key}" is not in models`);
    prices[model] = parsePrice(entry, field, fail);
  }
  return prices;
}

function parsePrice(value: unknown, field: string, fail: Fail): ModelPrice {
  if (!isPlainObject(value)) fail(field, "must be an object {input, output, cache_read, cache_write} in USD per million tokens");
  const entry = value as Record<string, unknown>;
  for (const key of Object.keys(entry)) {
    if (!Object.hasOwn(priceFields, key)) fail(`${field}.${key}`, "unknown field (expected input, output, cache_read or cache_write)");
  }
  const usd = (key: keyof typeof priceFields, required: boolean): number | undefined => {
    const n = entry[key];
    if (n === undefined && !required) return undefined;
    if (typeof n !== "number" || !Number.isFinite(n) || n < 0) fail(`${field}.${key}`, "must be a number of USD per million tokens, 0 or more");
    return n as number;
  };
  const input = usd("input", true)!;
  return { input, output: usd("output", true)!, cacheRead: usd("cache_read", false) ?? input, cacheWrite: usd("cache_write", false) ?? input };
}
