import { type ConversationStore, stateWriteParts } from "../types.ts";
import type { StoreContext } from "./context.ts";
import { insertRows } from "./insert-rows.ts";
import { conflictAs } from "./rows.ts";
import { indexText, turnText } from "./session-text.ts";
import { insertSession, ownsSession } from "./sessions.ts";
import { writeMessageRows } from "./session-state.ts";
import { TOOL_CALL_COLUMNS, TURN_COLUMNS, toolCallValues, turnValues } from "./turns.ts";

const placeholders = (n: number) => Array.from({ length: n }, () => "?").join(", ");

/** Rollback marks and forks: the writes that change which turns a model sees, each one transaction. */
export function forkRepo({ db, now }: StoreContext): ConversationStore {
  return {
    async rollBackTurns(tenantId, sessionId, turns, write) {
      return db.transaction(async (tx) => {
        if (!(await ownsSession(tx, tenantId, sessionId))) return false;
        if (turns.length > 0) {
          // Turns stored before they had numbers are numbered by their seq.
          await tx.run(`UPDATE turns SET rolled_back = 1 WHERE session_id = ? AND COALESCE(turn, seq) IN (${placeholders(turns.length)})`, [
            sessionId,
            ...turns,
          ]);
        }
        if (write !== undefined) {
          const { state, messages } = stateWriteParts(write);
          await tx.run("UPDATE sessions SET state = ?, updated_at = ? WHERE id = ?", [state, now(), sessionId]);
          await writeMessageRows(tx, sessionId, messages);
        }
        return true;
      });
    },

    forkSession(tenantId, input, turns, write) {
      const at = now();
      const { state, messages } = stateWriteParts(write);
      return conflictAs(db.dialect, "a session with this id already exists", () =>
        db.transaction(async (tx) => {
          const session = await insertSession(tx, db.dialect, tenantId, input, at);
          const seqOf = (i: number) => i + 1;
          await insertRows(
            tx,
            "turns",
            TURN_COLUMNS,
            turns.map(({ record, origin }, i) => [session.id, seqOf(i), ...turnValues(record, at, undefined, origin).turn]),
          );
          await insertRows(
            tx,
            "tool_calls",
            TOOL_CALL_COLUMNS,
            turns.flatMap(({ record }, i) => record.toolCalls.map((c, idx) => [session.id, seqOf(i), ...toolCallValues(idx, c)])),
          );
          // The copies are the fork's own text: found by search like turns it runs itself.
          for (const [i, { record }] of turns.entries()) await indexText(tx, db.dialect, session.id, seqOf(i), turnText(record));
          // The copies count as the fork's stored turns (its next turn's seq follows them); their usage was the source's.
          await tx.run("UPDATE sessions SET turn_count = ?, state = ? WHERE id = ?", [turns.length, state, session.id]);
          await writeMessageRows(tx, session.id, messages);
          return { ...session, turnCount: turns.length };
        }),
      );
    },
  };
}
