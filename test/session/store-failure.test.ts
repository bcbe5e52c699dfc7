import { afterAll, beforeAll, expect, it } from "vitest";
import { MemoryPersistence } from "../support/memory-persistence.ts";
import type { TurnRecord } from "../../src/agent/index.ts";
import type { LoggedEvent } from "../../src/session/index.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { caseOf, readTurn, rq, startSession, turnCompleteOf, responseValue } from "../support/session-protocol.ts";

/** Real session persistence in memory whose turn writes fail while `failing` is set. */
class FlakyPersistence extends MemoryPersistence {
  failing = false;
  override async appendTurn(tenantId: string, sessionId: string, record: TurnRecord, events: LoggedEvent[], state?: string): Promise<void> {
    if (this.failing) throw new Error("disk full");
    return super.appendTurn(tenantId, sessionId, record, events, state);
  }
}

let server: TestServer;
const persistence = new FlakyPersistence();
beforeAll(async () => {
  server = await startServer({}, { persistence });
});
afterAll(() => server?.close());

it("a turn the store refused is announced with a retryable internal error before its turn_complete, and its events are kept for the next write", async () => {
  const factory = sessionClientFactory("grpc-js", server.url);
  const client = factory.open();
  try {
    const started = await startSession(client);
    persistence.failing = true;
    client.send(rq.user("first"));
    const failed = await readTurn(client);
    const kinds = failed.map(caseOf);
    expect(kinds.at(-1)).toBe("turnComplete");
    const error = responseValue(failed.at(-2)!, "error");
    expect(error).toMatchObject({ code: "internal", retryable: true });

    persistence.failing = false;
    client.send(rq.user("second"));
    const ok = await readTurn(client);
    expect(turnCompleteOf(ok).stopReason).toBe("end_turn");
    const delivered = [...failed, ...ok].map((r) => Number(r.seq));
    expect(delivered).toEqual(delivered.map((_, i) => delivered[0]! + i));

    // The second write carries every event of both turns, each seq once and in order.
    const stored = persistence.sessions.get(started.sessionId)!;
    const seqs = stored.events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs.at(-1)).toBe(Number(ok.at(-1)!.seq));
    expect(stored.turns.map((t) => t.userContent)).toEqual(["second"]);
  } finally {
    client.cancel();
    await factory.close();
  }
});
