// A session's writes store what a turn adds, not its whole state again: the bytes each turn
// writes to the real SQLite file (state row and message rows, counted by triggers) stay the
// same while its history grows.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SQLITE_FILE_NAME } from "../../src/store/index.ts";
import { liveSession, startServer, type TestServer } from "../support/server.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { readTurn, rq, startSession, turnCompleteOf } from "../support/session-protocol.ts";

let server: TestServer;
let db: DatabaseSync;

beforeAll(async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "roz-state-writes-"));
  server = await startServer({ ROZ_DATA_DIR: dataDir });
  db = new DatabaseSync(join(dataDir, SQLITE_FILE_NAME), { timeout: 5000 });
  // Every write of a state row or a message row, with its size, as the server's own transactions make them.
  db.exec(`CREATE TABLE written (kind TEXT NOT NULL, bytes INTEGER NOT NULL);
    CREATE TRIGGER state_written AFTER UPDATE OF state ON sessions WHEN new.state IS NOT NULL
      BEGIN INSERT INTO written VALUES ('state', length(CAST(new.state AS BLOB))); END;
    CREATE TRIGGER message_inserted AFTER INSERT ON session_messages
      BEGIN INSERT INTO written VALUES ('message', length(CAST(new.message AS BLOB))); END;
    CREATE TRIGGER message_updated AFTER UPDATE ON session_messages
      BEGIN INSERT INTO written VALUES ('message', length(CAST(new.message AS BLOB))); END;`);
});
afterAll(async () => {
  db?.close();
  await server?.close();
});

/** Rows and bytes written so far, per kind. */
function writtenSoFar(): Record<"state" | "message", { rows: number; bytes: number }> {
  const totals = { state: { rows: 0, bytes: 0 }, message: { rows: 0, bytes: 0 } };
  for (const row of db.prepare("SELECT kind, COUNT(*) AS n, SUM(bytes) AS b FROM written GROUP BY kind").all()) {
    totals[row.kind as "state" | "message"] = { rows: Number(row.n), bytes: Number(row.b) };
  }
  return totals;
}

it("a turn's writes store its new messages and a state row of constant size, however long the history", async () => {
  const factory = sessionClientFactory("grpc-js", server.url);
  const client = factory.open();
  try {
    const started = await startSession(client);
    const perTurn: { stateRows: number; stateBytes: number; messageRows: number; messageBytes: number }[] = [];
    for (let turn = 1; turn <= 25; turn++) {
      const before = writtenSoFar();
      client.send(rq.user(`turn ${String(turn).padStart(3, "0")}: ${"words of a long enough message ".repeat(20)}`));
      expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
      const after = writtenSoFar();
      perTurn.push({
        stateRows: after.state.rows - before.state.rows,
        stateBytes: after.state.bytes - before.state.bytes,
        messageRows: after.message.rows - before.message.rows,
        messageBytes: after.message.bytes - before.message.bytes,
      });
    }
    const stored = db.prepare("SELECT COUNT(*) AS n, SUM(length(message)) AS b FROM session_messages WHERE session_id = ?").get(started.sessionId)!;
    // The history grew by the user's message and the answer at each turn ...
    expect(Number(stored.n)).toBe(50);
    const [second, last] = [perTurn[1]!, perTurn.at(-1)!];
    // ... and each turn wrote just those two messages, with the state at its start and at its end
    // (the first turn's window may also hold the new session's own first state write).
    for (const t of perTurn.slice(1)) expect(t).toMatchObject({ stateRows: 2, messageRows: 2 });
    expect(perTurn[0]!.messageRows).toBe(2);
    expect(last.messageBytes).toBe(second.messageBytes);
    expect(last.stateBytes).toBeLessThanOrEqual(second.stateBytes + 10);
    // What the 25th turn wrote is a small part of the history it continues.
    expect(last.stateBytes + last.messageBytes).toBeLessThan(Number(stored.b) / 10);
  } finally {
    client.cancel();
    await factory.close();
  }
});

it("a session stored whole by an older server (history inline in its state, no message rows) is adopted and moves to rows at its next write", async () => {
  const factory = sessionClientFactory("grpc-js", server.url);
  const first = factory.open();
  const second = factory.open();
  try {
    const { sessionId } = await startSession(first);
    for (const text of ["one", "two"]) {
      first.send(rq.user(text));
      expect(turnCompleteOf(await readTurn(first)).stopReason).toBe("end_turn");
    }
    const history = [...liveSession(server.app, sessionId)!.agent.history()];
    await server.app.registry.suspend(liveSession(server.app, sessionId)!);
    // What an older server stored: the whole snapshot (version 1), history inline.
    const row = db.prepare("SELECT state FROM sessions WHERE id = ?").get(sessionId)!;
    const { historyLength, startHistoryLength: _, ...state } = JSON.parse(String(row.state)) as Record<string, unknown>;
    const messages = db.prepare("SELECT message FROM session_messages WHERE session_id = ? AND list = 0 ORDER BY position").all(sessionId);
    expect(messages).toHaveLength(historyLength as number);
    const whole = { ...state, version: 1, history: messages.map((m) => JSON.parse(String(m.message)) as unknown) };
    db.prepare("UPDATE sessions SET state = ? WHERE id = ?").run(JSON.stringify(whole), sessionId);
    db.prepare("DELETE FROM session_messages WHERE session_id = ?").run(sessionId);

    const seen = first.responses.seen.at(-1)!.seq;
    second.send({ request: { case: "resume", value: { sessionId, afterSeq: seen } } });
    second.send(rq.user("three"));
    expect(turnCompleteOf(await readTurn(second)).stopReason).toBe("end_turn");
    const adopted = liveSession(server.app, sessionId)!.agent.history();
    expect(adopted.slice(0, history.length)).toEqual(history);
    expect(adopted).toHaveLength(history.length + 2);
    const stored = db.prepare("SELECT message FROM session_messages WHERE session_id = ? AND list = 0 ORDER BY position").all(sessionId);
    expect(stored.map((m) => JSON.parse(String(m.message)) as unknown)).toEqual(adopted);
    expect(JSON.parse(String(db.prepare("SELECT state FROM sessions WHERE id = ?").get(sessionId)!.state))).toMatchObject({
      version: 2,
      historyLength: adopted.length,
    });
  } finally {
    first.cancel();
    second.cancel();
    await factory.close();
  }
});
