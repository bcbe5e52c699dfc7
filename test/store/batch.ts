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
    } finally {
      await db.close();
    }
  });
}
