import { describe, expect, it } from "vitest";
import type { SuiteContext } from "../conformance.ts";
import { turnFor } from "../fixtures.ts";

/** §11 in the store: turn numbers, rollback marks and forks (copied turns with their origin). */
export function conversationSuite(ctx: SuiteContext): void {
  describe("turn numbers, rollback and fork", () => {
    it("keeps each turn's own number; rollBackTurns marks turns by number and stores the state in one write", async () => {
      const tenant = await ctx.tenant();
      const store = ctx.store();
      const session = await store.createSession(tenant.id, { environmentId: "env", model: "scripted/default" });
      // A session whose turn 2 was never stored (a failed write): numbers are the session's, not positions.
      for (const n of [1, 3, 4]) await store.appendTurn(tenant.id, session.id, turnFor(n, { turn: n, ...(n === 4 ? { rolledBack: true } : {}) }));
      expect(await store.rollBackTurns(tenant.id, session.id, [3], '{"after":"rollback"}')).toBe(true);
      const turns = await store.listTurns(tenant.id, session.id);
      expect(turns!.map((t) => [t.seq, t.turn, t.rolledBack])).toEqual([
        [1, 1, false],
        [2, 3, true],
        [3, 4, true],
      ]);
      expect((await store.getResumableSession(tenant.id, session.id, 0))?.state).toBe('{"after":"rollback"}');
      const other = await ctx.tenant("other");
      expect(await store.rollBackTurns(other.id, session.id, [1])).toBe(false);
      expect((await store.listTurns(tenant.id, session.id))![0]!.rolledBack).toBe(false);
    });

    it("forkSession creates the session with copies of the turns (tool calls included), marked with their origin", async () => {
      const tenant = await ctx.tenant();
      const store = ctx.store();
      const source = await store.createSession(tenant.id, { environmentId: "env", model: "scripted/default" });
      for (const n of [1, 2, 3]) await store.appendTurn(tenant.id, source.id, turnFor(n, { turn: n, ...(n === 2 ? { rolledBack: true } : {}) }));
      const stored = (await store.listTurns(tenant.id, source.id))!;
      const id = crypto.randomUUID();
      const fork = await store.forkSession(
        tenant.id,
        { id, environmentId: "env", model: "scripted/default", status: "detached" },
        stored.map((t) => ({ record: t, origin: { sessionId: source.id, turn: t.turn } })),
        '{"fork":true}',
      );
      expect(fork).toMatchObject({ id, status: "detached", turnCount: 3, usage: { inputTokens: 0, outputTokens: 0 } });
      const copies = await store.listTurns(tenant.id, id);
      expect(copies).toEqual(stored.map((t) => ({ ...t, sessionId: id, forkedFrom: { sessionId: source.id, turn: t.turn } })));
      expect((await store.getResumableSession(tenant.id, id, 0))?.state).toBe('{"fork":true}');
      // The fork's own next turn follows the copies.
      expect(await store.appendTurn(tenant.id, id, turnFor(4, { turn: 4 }))).toBe(4);
      await expect(store.forkSession(tenant.id, { id, environmentId: "env", model: "scripted/default" }, [], "{}")).rejects.toMatchObject({
        reason: "conflict",
      });
    });
  });
}
