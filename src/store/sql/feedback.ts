import type { Feedback, FeedbackStore } from "../types.ts";
import type { SqlRow } from "./database.ts";
import type { StoreContext } from "./context.ts";
import { opt } from "./rows.ts";
import { ownsSession } from "./sessions.ts";

const feedbackOf = (row: SqlRow): Feedback => ({
  sessionId: String(row.session_id),
  messageId: String(row.message_id),
  rating: String(row.rating),
  comment: opt(row.comment as string | null),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

export function feedbackRepo({ db, now }: StoreContext): FeedbackStore {
  return {
    putFeedback(tenantId, input) {
      return db.transaction(async (tx) => {
        if (!(await ownsSession(tx, tenantId, input.sessionId))) return undefined;
        const at = now();
        const row = await tx.get(
          `INSERT INTO feedback (session_id, message_id, rating, comment, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (session_id, message_id)
           DO UPDATE SET rating = excluded.rating, comment = excluded.comment, updated_at = excluded.updated_at
           RETURNING *`,
          [input.sessionId, input.messageId, input.rating, input.comment, at, at],
        );
        return feedbackOf(row!);
      });
    },

    async listFeedback(tenantId, sessionId) {
      if (!(await ownsSession(db, tenantId, sessionId))) return undefined;
      const rows = await db.all("SELECT * FROM feedback WHERE session_id = ? ORDER BY created_at, message_id", [sessionId]);
      return rows.map(feedbackOf);
    },
  };
}
