import { describe, expect, it } from "vitest";
import { sharedUtf8, TextParts } from "../../../src/domain/index.ts";
import type { MessageRows, Tenant } from "../../../src/store/index.ts";
import type { SuiteContext } from "../conformance.ts";
import { turnFor } from "../fixtures.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const msg = (text: string) => JSON.stringify({ role: "user", parts: [{ type: "text", text }] });
const rows = (list: MessageRows["list"], from: number, ...texts: string[]): MessageRows => ({ list, from, messages: texts.map(msg) });

/** A session's message rows: written with its state by every state write, replaced from a position, read in order. */
export function sessionMessageSuite(ctx: SuiteContext): void {
  const newSession = (tenant: Tenant) => ctx.store().createSession(tenant.id, { environmentId: "env", model: "scripted/default" });
  const messagesOf = (tenant: Tenant, id: string) => ctx.store().listSessionMessages(tenant.id, id);
  const stateOf = async (tenant: Tenant, id: string) => (await ctx.store().getResumableSession(tenant.id, id, 0))?.state;

  describe("session message rows", () => {
    it("are written with the state by a turn and by saveSessionState, each list in order; unknown or another tenant's: undefined", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      expect(await messagesOf(tenant, session.id)).toEqual({ history: [], start: [] });
      const first = { state: '{"n":2}', messages: [rows("history", 0, "a", "b"), rows("start", 0, "s")] };
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(1), [{ seq: 1, payload: bytes("e1") }], first);
      expect(await messagesOf(tenant, session.id)).toEqual({ history: [msg("a"), msg("b")], start: [msg("s")] });
      expect(await stateOf(tenant, session.id)).toBe('{"n":2}');
      expect(await ctx.store().saveSessionState(tenant.id, session.id, { state: '{"n":3}', messages: [rows("history", 2, "c")] })).toBe(true);
      expect(await messagesOf(tenant, session.id)).toEqual({ history: [msg("a"), msg("b"), msg("c")], start: [msg("s")] });
      expect(await stateOf(tenant, session.id)).toBe('{"n":3}');
      // A write without message rows keeps them.
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(2), [], { state: '{"n":3,"t":2}', messages: [] });
      expect((await messagesOf(tenant, session.id))?.history).toHaveLength(3);
      const other = await ctx.tenant("other");
      expect(await ctx.store().listSessionMessages(other.id, session.id)).toBeUndefined();
      expect(await ctx.store().saveSessionState(other.id, session.id, { state: "{}", messages: [rows("history", 0, "x")] })).toBe(false);
      expect(await ctx.store().listSessionMessages(tenant.id, crypto.randomUUID())).toBeUndefined();
      expect((await messagesOf(tenant, session.id))?.history).toEqual([msg("a"), msg("b"), msg("c")]);
    });

    it("rows from a position on are replaced, those past them deleted when truncated; rows written again (a commit not seen) are upserted", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      await ctx.store().saveSessionState(tenant.id, session.id, { state: "{}", messages: [rows("history", 0, "a", "b", "c", "d", "e")] });
      // Old tool results cleared: c and d rewritten, the rest kept.
      await ctx.store().saveSessionState(tenant.id, session.id, { state: "{}", messages: [rows("history", 2, "c'", "d'")] });
      expect((await messagesOf(tenant, session.id))?.history).toEqual(["a", "b", "c'", "d'", "e"].map(msg));
      // Compaction: a summary instead of b to e.
      const summary = { ...rows("history", 1, "summary"), truncate: true };
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(1), [], { state: "{}", messages: [summary] });
      expect((await messagesOf(tenant, session.id))?.history).toEqual([msg("a"), msg("summary")]);
      // The same append twice.
      const append = { state: "{}", messages: [rows("history", 2, "e", "f")] };
      await ctx.store().saveSessionState(tenant.id, session.id, append);
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(2), [], append);
      expect((await messagesOf(tenant, session.id))?.history).toEqual([msg("a"), msg("summary"), msg("e"), msg("f")]);
      // A rollback to the start: every row goes.
      expect(
        await ctx
          .store()
          .rollBackTurns(tenant.id, session.id, [2], { state: '{"back":1}', messages: [{ list: "history", from: 0, messages: [], truncate: true }] }),
      ).toBe(true);
      expect(await messagesOf(tenant, session.id)).toEqual({ history: [], start: [] });
      expect(await stateOf(tenant, session.id)).toBe('{"back":1}');
    });

    it("a turn write that fails stores none of its rows nor its state", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(1), [{ seq: 1, payload: bytes("e1") }], { state: "{}", messages: [rows("history", 0, "a")] });
      const clash = { state: '{"lost":true}', messages: [rows("history", 0, "x", "y")] };
      await expect(ctx.store().appendTurn(tenant.id, session.id, turnFor(2), [{ seq: 1, payload: bytes("again") }], clash)).rejects.toMatchObject({
        reason: "conflict",
      });
      expect((await messagesOf(tenant, session.id))?.history).toEqual([msg("a")]);
      expect(await stateOf(tenant, session.id)).toBe("{}");
    });

    it("large messages held as parts (shared UTF-8 over 1 MB) are stored as their text, with a turn and beside small ones", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      const big = msg("large ✓ ünïcode 𝄞 ".repeat(60_000));
      const parts: MessageRows = {
        list: "history",
        from: 0,
        messages: [msg("small"), new TextParts([sharedUtf8(big)]), new TextParts(['{"x":', sharedUtf8('"𝄞"'), "}"])],
      };
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(1), [{ seq: 1, payload: bytes("e1") }], { state: "{}", messages: [parts] });
      expect((await messagesOf(tenant, session.id))?.history).toEqual([msg("small"), big, '{"x":"𝄞"}']);
    });

    it("forkSession writes the fork's rows; deleting an ended session deletes its rows", async () => {
      const tenant = await ctx.tenant();
      const id = crypto.randomUUID();
      const state = { state: '{"fork":1}', messages: [rows("history", 0, "a", "b"), rows("start", 0, "s")] };
      await ctx.store().forkSession(tenant.id, { id, environmentId: "env", model: "scripted/default" }, [], state);
      expect(await messagesOf(tenant, id)).toEqual({ history: [msg("a"), msg("b")], start: [msg("s")] });
      await ctx.store().updateSessionStatus(tenant.id, id, { status: "completed", endedAt: 1 });
      await ctx.store().deleteEndedSessions(2, 1000);
      expect(await messagesOf(tenant, id)).toBeUndefined();
    });
  });
}
