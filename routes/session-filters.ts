/** The query of `GET /v1/sessions`: filters, full-text search and paging, and the store filter it makes. */
import { SESSION_LABEL_LIMITS } from "../src/domain/index.ts";
import { RozError } from "../src/errors/index.ts";
import type { SessionFilter, SessionStatus } from "../src/store/index.ts";
import { pageQueryProperties, pageRequestOf } from "./schemas.ts";

/** Every session status, as REST names them. */
export const statuses: SessionStatus[] = ["active", "detached", "completed", "cancelled", "error"];

/** The longest `q`; the store looks for at most `MAX_SEARCH_WORDS` of its words. */
const MAX_QUERY_CHARS = 256;
const MAX_SEARCH_WORDS = 16;
const METADATA_PREFIX = "metadata.";

export const sessionListQuery = {
  type: "object",
  properties: {
    ...pageQueryProperties,
    status: { type: "string", enum: statuses },
    environment_id: { type: "string", format: "uuid" },
    archived: {
      type: "string",
      enum: ["false", "true", "any"],
      default: "false",
      description: "false: archived sessions are hidden; true: only them; any: both",
    },
    created_after: { type: "string", format: "date-time", description: "only sessions created after this time (RFC 3339)" },
    created_before: { type: "string", format: "date-time", description: "only sessions created before this time (RFC 3339)" },
    q: {
      type: "string",
      maxLength: MAX_QUERY_CHARS,
      description: "full-text search: sessions whose title, or one turn's user or assistant text, holds every word (whole words, any case)",
    },
  },
  patternProperties: {
    [`^metadata\\..{1,${SESSION_LABEL_LIMITS.keyChars}}$`]: {
      type: "string",
      maxLength: SESSION_LABEL_LIMITS.valueChars,
      description: "metadata.KEY=VALUE: only sessions whose metadata maps KEY to VALUE (repeat for more pairs)",
    },
  },
  additionalProperties: false,
} as const;

interface ListQuery {
  limit: number;
  cursor?: string | undefined;
  status?: SessionStatus | undefined;
  environment_id?: string | undefined;
  archived?: "false" | "true" | "any" | undefined;
  created_after?: string | undefined;
  created_before?: string | undefined;
  q?: string | undefined;
}

/** The store filter of a query validated by `sessionListQuery`. */
export function sessionFilterOf(query: ListQuery): SessionFilter {
  const metadata = Object.fromEntries(
    Object.entries(query)
      .filter(([key]) => key.startsWith(METADATA_PREFIX))
      .map(([key, value]) => [key.slice(METADATA_PREFIX.length), String(value)]),
  );
  const archived = query.archived ?? "false";
  return {
    ...pageRequestOf(query),
    ...(query.status !== undefined ? { status: query.status } : {}),
    ...(query.environment_id !== undefined ? { environmentId: query.environment_id } : {}),
    ...(archived !== "any" ? { archived: archived === "true" } : {}),
    ...(query.created_after !== undefined ? { createdAfter: Date.parse(query.created_after) } : {}),
    ...(query.created_before !== undefined ? { createdBefore: Date.parse(query.created_before) } : {}),
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    ...(query.q !== undefined ? { words: searchWordsOf(query.q) } : {}),
  };
}

/** The words of `q` (letters and digits; everything else separates them); none is a 400. */
function searchWordsOf(q: string): string[] {
  const words = (q.match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, MAX_SEARCH_WORDS);
  if (words.length === 0) throw new RozError("invalid_argument", "q must contain at least one word (letters or digits)");
  return words;
}
