import { mergeMetadata, SESSION_LABEL_LIMITS } from "../../domain/index.ts";
import { RozError } from "../../errors/index.ts";
import type { SessionStore } from "../types.ts";
import type { SqlValue } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { fromJson, toJson } from "./rows.ts";
import { sessionOf } from "./sessions.ts";
import { indexTitle } from "./session-text.ts";

/**
 * Changing what names a session. `updated_at` is left alone: it tells the node heartbeat how
 * long a live session has been idle, and a new title is no sign of life.
 */
export function sessionLabelRepo({ db }: StoreContext): Pick<SessionStore, "updateSession"> {
  return {
    updateSession(tenantId, id, patch) {
      return db.transaction(async (tx) => {
        // The row lock (PostgreSQL) keeps two concurrent metadata merges from losing one;
        // SQLite's single writer does the same.
        const lock = db.dialect.name === "postgres" ? " FOR UPDATE" : "";
        const current = await tx.get(`SELECT metadata FROM sessions WHERE tenant_id = ? AND id = ?${lock}`, [tenantId, id]);
        if (current === undefined) return undefined;
        const set: string[] = [];
        const params: SqlValue[] = [];
        if (patch.title !== undefined) {
          set.push("title = ?");
          params.push(patch.title === "" ? null : patch.title);
        }
        if (patch.metadata !== undefined) {
          const merged = mergeMetadata(fromJson<Record<string, string>>(current.metadata), patch.metadata);
          if (Object.keys(merged).length > SESSION_LABEL_LIMITS.metadataPairs) {
            throw new RozError("invalid_argument", `metadata would have more than ${SESSION_LABEL_LIMITS.metadataPairs} keys`);
          }
          set.push("metadata = ?");
          params.push(toJson(merged));
        }
        if (patch.archived !== undefined) {
          set.push("archived = ?");
          params.push(patch.archived ? 1 : 0);
        }
        const sql =
          set.length === 0
            ? "SELECT * FROM sessions WHERE tenant_id = ? AND id = ?"
            : `UPDATE sessions SET ${set.join(", ")} WHERE tenant_id = ? AND id = ? RETURNING *`;
        const row = await tx.get(sql, [...params, tenantId, id]);
        if (patch.title !== undefined) await indexTitle(tx, db.dialect, id, patch.title ?? undefined);
        return row && sessionOf(row);
      });
    },
  };
}
