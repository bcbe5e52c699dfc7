import { RozError } from "../../errors/index.ts";
import type { Page, PageRequest } from "../types.ts";
import type { Sql, SqlRow, SqlValue } from "./database.ts";

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 500;

/** The key of the last item of a page: lists are ordered by (created_at DESC, id DESC). */
interface CursorKey {
  createdAt: number;
  id: string;
}

/** Opaque to clients: base64url of `[createdAt, id]`. */
export function encodeCursor(key: CursorKey): string {
  return Buffer.from(JSON.stringify([key.createdAt, key.id])).toString("base64url");
}

/** Throws `RozError("invalid_argument", "invalid cursor")` for anything `encodeCursor` did not make. */
export function decodeCursor(cursor: string): CursorKey {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error("not base64url");
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw new RozError("invalid_argument", "invalid cursor");
  }
  if (!Array.isArray(parsed) || parsed.length !== 2 || !Number.isSafeInteger(parsed[0]) || typeof parsed[1] !== "string") {
    throw new RozError("invalid_argument", "invalid cursor");
  }
  return { createdAt: parsed[0] as number, id: parsed[1] };
}

/** `undefined` → the default; above the maximum → the maximum; not a positive integer → invalid_argument. */
export function pageLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw new RozError("invalid_argument", "limit must be a positive integer");
  return Math.min(limit, MAX_PAGE_LIMIT);
}

export interface PageQuery<T> {
  /** `FROM` clause target; it must have `created_at` and `id` columns. */
  table: string;
  /** Conditions ANDed together, with `?` placeholders. */
  where: string[];
  params: SqlValue[];
  page: PageRequest | undefined;
  map: (row: SqlRow) => T;
}

/**
 * One page, newest first, keyed on (created_at, id) so that items created while a client pages
 * neither repeat nor shift: the cursor is a position in the order, not an offset.
 */
export async function listPage<T extends { createdAt: number; id: string }>(q: Sql, query: PageQuery<T>): Promise<Page<T>> {
  const limit = pageLimit(query.page?.limit);
  const where = [...query.where];
  const params = [...query.params];
  // An empty cursor means the first page, as an empty page token does in gRPC APIs.
  if (query.page?.cursor) {
    const after = decodeCursor(query.page.cursor);
    where.push("(created_at, id) < (?, ?)");
    params.push(after.createdAt, after.id);
  }
  const rows = await q.all(`SELECT * FROM ${query.table} WHERE ${where.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT ?`, [...params, limit + 1]);
  const items = rows.slice(0, limit).map(query.map);
  const last = items.at(-1);
  return rows.length > limit && last !== undefined ? { items, nextCursor: encodeCursor(last) } : { items };
}
