/**
 * Row ↔ value helpers shared by the repositories. Both engines return integers as JS
 * numbers (the Postgres adapter parses BIGINT), NULL as null and blobs as Uint8Array.
 */
import { RozError } from "../../errors/index.ts";
import type { TokenUsage } from "../../domain/index.ts";
import type { Dialect } from "./database.ts";

/** NULL → absent. */
export const opt = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);

/** A nullable integer column → number | undefined. */
export const optNum = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : Number(v));

export const toJson = (value: unknown): string => JSON.stringify(value);

export const fromJson = <T>(text: unknown): T => JSON.parse(String(text)) as T;

/** Columns `input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_creation_tokens` → TokenUsage. */
export function usageOf(row: Record<string, unknown>): TokenUsage {
  return {
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
    cacheReadTokens: Number(row.cache_read_tokens),
    cacheCreationTokens: Number(row.cache_creation_tokens),
  };
}

/** Runs `fn`, turning a unique violation into `RozError("conflict", message)`. */
export async function conflictAs<T>(dialect: Dialect, message: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (dialect.isUniqueViolation(err)) throw new RozError("conflict", message, { cause: err });
    throw err;
  }
}
