/**
 * JSON schemas shared by the REST routes, and the helpers that shape their answers. Every
 * field name on the wire is snake_case; times are RFC 3339 strings.
 */
import type { FastifyPluginAsyncJsonSchemaToTs } from "@fastify/type-provider-json-schema-to-ts";
import type { JsonObject, JsonValue } from "../src/domain/index.ts";

/** How request schemas become types: a free-form object (`additionalProperties: true`) is JSON. */
interface RequestTypes {
  deserialize: [{ pattern: { type: "object"; additionalProperties: true }; output: JsonObject }];
}

/**
 * How reply schemas become types. Replies hold what the store holds, whose types are
 * wider than what the request schemas let in: a stored enum value (a rule's category, a
 * key's scopes) is a string, a free-form object any JSON.
 */
interface ReplyTypes {
  deserialize: [
    { pattern: { type: "object"; additionalProperties: true }; output: JsonValue },
    { pattern: { type: "string"; enum: readonly string[] }; output: string },
  ];
}

/**
 * A REST route plugin whose params, query, body and replies are typed from their JSON
 * schemas (json-schema-to-ts), so that a route's types are written once, as its schema.
 */
export type RoutePlugin<Options extends object = Record<never, never>> = FastifyPluginAsyncJsonSchemaToTs<{
  Options: Options;
  ValidatorSchemaOptions: RequestTypes;
  SerializerSchemaOptions: ReplyTypes;
}>;

/** `{"error":{"code","message","details?"}}`: the body of every REST error. */
export const errorSchema = {
  type: "object",
  properties: {
    error: {
      type: "object",
      properties: {
        code: { type: "string", description: "stable reason, e.g. not_found, invalid_argument, rate_limited" },
        message: { type: "string" },
        details: { type: "object", additionalProperties: true },
      },
      required: ["code", "message"],
    },
  },
  required: ["error"],
} as const;

/** The error answers every authenticated route can give, plus `extra` statuses. */
export function errorResponses(...extra: number[]): Record<number, typeof errorSchema> {
  const statuses = [400, 401, 403, 429, ...extra];
  return Object.fromEntries(statuses.map((s) => [s, errorSchema]));
}

/** Path parameters `{id}`: a UUID (a malformed id is a 400, an unknown one a 404). */
export const idParams = {
  type: "object",
  properties: { id: { type: "string", format: "uuid" } },
  required: ["id"],
  additionalProperties: false,
} as const;

/** Largest page a client may ask for; more is a 400, not a silent cut. */
export const MAX_LIMIT = 200;

/** `limit` and `cursor` of every list route; merge more filters into `properties`. */
export const pageQueryProperties = {
  limit: { type: "integer", minimum: 1, maximum: MAX_LIMIT, default: 50, description: `page size (1..${MAX_LIMIT})` },
  cursor: { type: "string", maxLength: 512, description: "`next_cursor` of the previous page (opaque)" },
} as const;

/** The query of a list route without filters: `limit` and `cursor` only, nothing else accepted. */
export const pageQuery = { type: "object", properties: pageQueryProperties, additionalProperties: false } as const;

/** `{ items: [...], next_cursor? }`, newest first. */
export function pageSchema<T extends object>(item: T) {
  return {
    type: "object",
    properties: { items: { type: "array", items: item }, next_cursor: { type: "string" } },
    required: ["items"],
  } as const;
}

/** The store's page request from a query validated by `pageQuery` (which defaults `limit`). */
export function pageRequestOf({ limit, cursor }: { limit: number; cursor?: string | undefined }): { limit: number; cursor?: string } {
  return { limit, ...(cursor !== undefined ? { cursor } : {}) };
}

/** A store page in REST shape. */
export function toPage<T, U>(page: { items: T[]; nextCursor?: string }, map: (item: T) => U): { items: U[]; next_cursor?: string } {
  return { items: page.items.map(map), ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}) };
}

/** A time on the wire: an RFC 3339 string (see `iso`). */
export const timeSchema = { type: "string", format: "date-time" } as const;

/** Epoch milliseconds as RFC 3339; undefined stays undefined. */
export function iso(ms: number): string;
export function iso(ms: number | undefined): string | undefined;
export function iso(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

/** A permission rule as sent and returned (the rules StartSession enforces, first match wins). */
export const permissionRuleSchema = {
  type: "object",
  properties: {
    tool_pattern: {
      type: "string",
      minLength: 1,
      maxLength: 256,
      description: "glob over tool names: * (any run), ? (one character), [...] (a class); nothing else",
    },
    policy: { type: "string", enum: ["allow", "require_confirmation", "deny"] },
    category: { type: "string", enum: ["unspecified", "physical", "pure"], description: "only tools of this category" },
    reason: { type: "string", maxLength: 1000 },
  },
  required: ["tool_pattern", "policy"],
  additionalProperties: false,
} as const;

/** Token counts, cache tokens included (`input_tokens` counts the cached part too), and what they cost. */
export const usageSchema = {
  type: "object",
  properties: {
    input_tokens: { type: "integer" },
    output_tokens: { type: "integer" },
    cache_read_tokens: { type: "integer" },
    cache_creation_tokens: { type: "integer" },
    cost_usd: { type: "number", description: "USD at the providers file's prices; 0 for a model without one" },
  },
  required: ["input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd"],
} as const;

/** Token usage and its cost in the snake_case shape of `usageSchema`. */
export function usageJson(u: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheCreationTokens: number }, costUsd: number) {
  return {
    input_tokens: u.inputTokens,
    output_tokens: u.outputTokens,
    cache_read_tokens: u.cacheReadTokens,
    cache_creation_tokens: u.cacheCreationTokens,
    cost_usd: costUsd,
  };
}

/** A budget over a session's life: `max_tokens` (input + output tokens) and `max_cost_usd`; an absent field is no limit. */
export const budgetSchema = {
  type: "object",
  properties: {
    max_tokens: { type: "integer", minimum: 0, description: "input + output tokens over a session's life" },
    max_cost_usd: { type: "number", minimum: 0, description: "USD over a session's life" },
  },
  additionalProperties: false,
} as const;

/** A budget in the snake_case shape of `budgetSchema`. */
export const budgetJson = (b: { maxTokens?: number; maxCostUsd?: number }) => ({
  ...(b.maxTokens !== undefined ? { max_tokens: b.maxTokens } : {}),
  ...(b.maxCostUsd !== undefined ? { max_cost_usd: b.maxCostUsd } : {}),
});

/** A budget from its validated JSON; undefined when it sets no limit. */
export function budgetFromJson(b: {
  max_tokens?: number | undefined;
  max_cost_usd?: number | undefined;
}): { maxTokens?: number; maxCostUsd?: number } | undefined {
  const budget = {
    ...(b.max_tokens !== undefined ? { maxTokens: b.max_tokens } : {}),
    ...(b.max_cost_usd !== undefined ? { maxCostUsd: b.max_cost_usd } : {}),
  };
  return Object.keys(budget).length > 0 ? budget : undefined;
}
