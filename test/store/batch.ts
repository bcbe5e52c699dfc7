import { expect, it } from "vitest";
import type { SqlDatabase } from "../../src/store/sql/database.ts";

/** `SqlDatabase.batch` on an engine: its statements in order, their counts, all or none. */
export function batchBehaviour(open: () => Promise<SqlDatabase>): void {
  it("batch runs its statements in order in one transaction, and on a failure none of them", async () => {
    const db = await open();
    try {
      await db.run("CREATE TABLE batch_t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)");
      const counts = await db.batch([
        { sql: "INSERT INTO batch_t (id, n) VALUES (?, ?)", params: [1, 10] },
        { sql: "INSERT INTO batch_t (id, n) VALUES (?, ?)", params: [2, 20] },
        { sql: "UPDATE batch_t SET n = n + ? WHERE id >= ?", params: [1, 1] },
      ]);
      expect(counts).toEqual([1, 1, 2]);
      // The second statement breaks the primary key: the first one's row must not stay.
      await expect(
        db.batch([
          { sql: "INSERT INTO batch_t (id, n) VALUES (?, ?)", params: [3, 30] },
          { sql: "INSERT INTO batch_t (id, n) VALUES (?, ?)", params: [1, 99] },
        ]),
      ).rejects.toThrow();
      expect(await db.all("SELECT id, n FROM batch_t ORDER BY id")).toEqual([
        { id: 1, n: 11 },
        { id: 2, n: 21 },
      ]);
      expect(await db.batch([])).toEqual([]);
      // The connection is usable after the failed batch.
      expect(await db.run("DELETE FROM batch_t WHERE id = ?", [2])).toBe(1);
      // batchThenGet: the query sees the statements' writes, in the same transaction.
      const row = await db.batchThenGet<{ total: number }>([{ sql: "INSERT INTO batch_t (id, n) VALUES (?, ?)", params: [4, 40] }], {
        sql: "SELECT SUM(n) AS total FROM batch_t WHERE id >= ?",
        params: [1],
      });
      expect(Number(row?.total)).toBe(51);
      expect(await db.batchThenGet([], { sql: "SELECT n FROM batch_t WHERE id = ?", params: [99] })).toBeUndefined();
      await expect(
        db.batchThenGet([{ sql: "INSERT INTO batch_t (id, n) VALUES (?, ?)", params: [5, 50] }], { sql: "SELECT no_such_column FROM batch_t" }),
      ).rejects.toThrow();
      expect(await db.get("SELECT n FROM batch_t WHERE id = ?", [5])).toBeUndefined();
      // A `mustChange` statement that changes nothing stops the batch, and what ran before it is rolled back.
      const stoppedAt = await db.batch([
        { sql: "INSERT INTO batch_t (id, n) VALUES (?, ?)", params: [6, 60] },
        { sql: "UPDATE batch_t SET n = 0 WHERE id = ?", params: [99], mustChange: true },
        { sql: "INSERT INTO batch_t (id, n) VALUES (?, ?)", params: [7, 70] },
      ]);
      expect(stoppedAt).toEqual([1, 0]);
      const stopped = await db.batchThenGet(
        [
          { sql: "INSERT INTO batch_t (id, n) VALUES (?, ?)", params: [6, 60] },
          { sql: "UPDATE batch_t SET n = 0 WHERE id = ?", params: [99], mustChange: true },
        ],
        { sql: "SELECT COUNT(*) AS rows FROM batch_t" },
      );
      expect(stopped).toBeUndefined();
      expect(await db.all("SELECT id FROM batch_t WHERE id >= ?", [5])).toEqual([]);
      // One that does change a row lets the batch go on.
      const went = await db.batchThenGet<{ n: number }>([{ sql: "UPDATE batch_t SET n = n + 1 WHERE id = ?", params: [4], mustChange: true }], {
        sql: "SELECT n FROM batch_t WHERE id = ?",
        params: [4],
      });
      expect(Number(went?.n)).toBe(41);
    } finally {
      await db.close();
    }
  });
}
