import { describe, expect, it } from "vitest";
import type { ToolCallRecord } from "../../../src/agent/index.ts";
import { RozError } from "../../../src/errors/index.ts";
import { migrations, openStore, type Tenant } from "../../../src/store/index.ts";
import type { SuiteContext } from "../conformance.ts";
import { sumUsage, thinkingBlocksFor, turnFor, usageFor } from "../fixtures.ts";

export function transcriptSuite(ctx: SuiteContext): void {
  const newSession = async (tenant: Tenant) => ctx.store().createSession(tenant.id, { environmentId: "env", model: "scripted/default" });

  describe("transcript", () => {
    it("appendTurn numbers turns and listTurns returns the full records in order", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      const records = [1, 2, 3, 4, 5, 6].map((n) => turnFor(n));
      records[1]!.userContext.push({ label: "shot.png", mimeType: "image/png", data: new Uint8Array([0, 1, 2, 250, 255]) });
      for (const [i, r] of records.entries()) expect(await ctx.store().appendTurn(tenant.id, session.id, r)).toBe(i + 1);
      const turns = await ctx.store().listTurns(tenant.id, session.id);
      expect(turns).toEqual(records.map((r, i) => ({ ...r, sessionId: session.id, seq: i + 1, turn: i + 1, rolledBack: false })));
      const image = turns![1]!.userContext[1]!;
      expect("data" in image && image.data).toBeInstanceOf(Uint8Array);
      expect(await ctx.store().listTurns(tenant.id, session.id, { afterSeq: 2, limit: 3 })).toEqual(turns!.slice(2, 5));
      expect(await ctx.store().listTurns(tenant.id, session.id, { afterSeq: 6 })).toEqual([]);
    });

    it("keeps every model call's thinking with its signature, in order; a turn without thinking has none", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      // Signatures are opaque provider data: long, base64 or packed JSON, and must come back byte for byte.
      const packed = `anthropic-blocks/1:${JSON.stringify([
        { type: "thinking", thinking: 'a "quoted" step', signature: "Eq==" },
        { type: "redacted_thinking", data: "c2VjcmV0" },
      ])}`;
      const blocks = [
        { text: "Read the file first.", signature: "EqQBCgIYAhIM+/=".repeat(200), toolUse: true },
        { text: "Now grep — ünïcode 🙂 and\nnew lines.", signature: packed, toolUse: true },
        { text: "Answer from the results.", signature: "ErUBCkYIBRgC", toolUse: false },
        { text: "unsigned (another provider)", toolUse: false },
      ];
      const record = turnFor(4, { assistantThinking: blocks.map((b) => b.text).join("\n\n"), assistantThinkingBlocks: blocks });
      await ctx.store().appendTurn(tenant.id, session.id, record);
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(5, { assistantThinking: "", assistantThinkingBlocks: [] }));
      const turns = await ctx.store().listTurns(tenant.id, session.id);
      expect(turns?.[0]?.assistantThinkingBlocks).toEqual(blocks);
      expect(turns?.[0]?.assistantThinkingBlocks[3]).not.toHaveProperty("signature");
      expect(turns?.[1]?.assistantThinkingBlocks).toEqual([]);
    });

    it("a database from before per-call thinking gains it when migrated", async () => {
      const settings = await ctx.harness.newDatabase();
      const first = await openStore(settings, { migrations: migrations.filter((m) => m.name !== "thinking_blocks") });
      const tenant = await first.ensureTenant("before-thinking-blocks");
      const session = await first.createSession(tenant.id, { environmentId: "env", model: "scripted/default" });
      await first.close();
      const migrated = await openStore(settings);
      try {
        const record = turnFor(3);
        expect(await migrated.appendTurn(tenant.id, session.id, record)).toBe(1);
        expect((await migrated.listTurns(tenant.id, session.id))?.[0]?.assistantThinkingBlocks).toEqual(thinkingBlocksFor(3));
      } finally {
        await migrated.close();
      }
    });

    it("session totals are the sums over its turns", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      const records = [3, 5, 10, 7].map((n) => turnFor(n));
      for (const r of records) await ctx.store().appendTurn(tenant.id, session.id, r);
      const stored = await ctx.store().getSession(tenant.id, session.id);
      expect(stored).toMatchObject({
        turnCount: 4,
        usage: sumUsage(records.map((r) => r.usage)),
        compactionCount: records.reduce((n, r) => n + r.compactions, 0),
      });
      expect(stored!.compactionCount).toBe(2);
    });

    it("cancelled and failed turns are stored as such, with their usage", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      const interrupted: ToolCallRecord = {
        id: "call_x",
        name: "shell_run",
        parameters: { cmd: "sleep 100" },
        permission: "cancelled",
        error: "cancelled by the client",
        startedAt: 1,
        endedAt: 2,
      };
      const cancelled = turnFor(1, { stopReason: "cancelled", assistantText: "partial", toolCalls: [interrupted] });
      const failed = turnFor(2, {
        stopReason: "error",
        error: { code: "model_error", message: "HTTP 503", retryable: true },
        toolCalls: [],
        assistantText: "",
      });
      await ctx.store().appendTurn(tenant.id, session.id, cancelled);
      await ctx.store().appendTurn(tenant.id, session.id, failed);
      const turns = await ctx.store().listTurns(tenant.id, session.id);
      expect(turns?.map((t) => t.stopReason)).toEqual(["cancelled", "error"]);
      expect(turns?.[0]?.toolCalls).toEqual([interrupted]);
      expect(turns?.[0]?.toolCalls[0]?.outcome).toBeUndefined();
      expect(turns?.[1]?.error).toEqual({ code: "model_error", message: "HTTP 503", retryable: true });
      expect((await ctx.store().getSession(tenant.id, session.id))?.usage).toEqual(sumUsage([usageFor(1), usageFor(2)]));
    });

    it("a failure inside appendTurn rolls everything back", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(1));
      const before = await ctx.store().getSession(tenant.id, session.id);
      // The second tool call violates NOT NULL after the session row, the turn and the first call were written.
      const bad = turnFor(3);
      bad.toolCalls = [bad.toolCalls[0]!, { ...bad.toolCalls[1]!, name: null as unknown as string }];
      await expect(ctx.store().appendTurn(tenant.id, session.id, bad)).rejects.toThrow();
      expect(await ctx.store().getSession(tenant.id, session.id)).toEqual(before);
      expect(await ctx.store().listTurns(tenant.id, session.id)).toHaveLength(1);
      // No gap: the next good turn takes the next number.
      expect(await ctx.store().appendTurn(tenant.id, session.id, turnFor(2))).toBe(2);
      expect((await ctx.store().listTurns(tenant.id, session.id))?.map((t) => t.seq)).toEqual([1, 2]);
    });

    it("appendTurn stores the turn's events with it; a repeated event seq is a conflict that stores nothing", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      const event = (seq: number) => ({ seq, payload: new TextEncoder().encode(`event ${seq}`) });
      expect(await ctx.store().appendTurn(tenant.id, session.id, turnFor(1), [event(1), event(2)])).toBe(1);
      expect((await ctx.store().readEvents(tenant.id, session.id))?.map((e) => e.seq)).toEqual([1, 2]);
      const before = await ctx.store().getSession(tenant.id, session.id);
      const err = await ctx
        .store()
        .appendTurn(tenant.id, session.id, turnFor(2), [event(3), event(2)])
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RozError);
      expect((err as RozError).reason).toBe("conflict");
      expect(await ctx.store().getSession(tenant.id, session.id)).toEqual(before);
      expect(await ctx.store().listTurns(tenant.id, session.id)).toHaveLength(1);
      expect((await ctx.store().readEvents(tenant.id, session.id))?.map((e) => e.seq)).toEqual([1, 2]);
    });

    it("concurrent appends to one session get distinct numbers", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      const seqs = await Promise.all([1, 2, 3, 4, 5].map((n) => ctx.store().appendTurn(tenant.id, session.id, turnFor(n))));
      expect([...seqs].sort()).toEqual([1, 2, 3, 4, 5]);
      expect((await ctx.store().getSession(tenant.id, session.id))?.turnCount).toBe(5);
    });

    it("another tenant's session behaves as unknown", async () => {
      const [tenant, other] = [await ctx.tenant(), await ctx.tenant()];
      const session = await newSession(tenant);
      await ctx.store().appendTurn(tenant.id, session.id, turnFor(1));
      expect(await ctx.store().appendTurn(other.id, session.id, turnFor(2))).toBeUndefined();
      // Nothing of a whole turn write lands in a session that is not the writer's: no event, no message row, no state.
      const write = { state: '{"other":1}', messages: [{ list: "history" as const, from: 0, messages: ['{"role":"user","parts":[]}'] }] };
      const call = { id: "c1", name: "read", parameters: {}, permission: "allowed", startedAt: 1, endedAt: 2 } as ToolCallRecord;
      const event = { seq: 9, payload: new TextEncoder().encode("e9") };
      const turnsBefore = await ctx.store().listTurns(tenant.id, session.id);
      expect(await ctx.store().appendTurn(other.id, session.id, turnFor(2, { toolCalls: [call] }), [event], write)).toBeUndefined();
      expect(await ctx.store().readEvents(tenant.id, session.id)).toEqual([]);
      expect(await ctx.store().listSessionMessages(tenant.id, session.id)).toEqual({ history: [], start: [] });
      expect((await ctx.store().getResumableSession(tenant.id, session.id, 0))?.state).not.toBe('{"other":1}');
      expect(await ctx.store().listTurns(tenant.id, session.id)).toEqual(turnsBefore);
      expect(await ctx.store().listTurns(other.id, session.id)).toBeUndefined();
      expect(await ctx.store().appendTurn(tenant.id, "00000000-0000-0000-0000-000000000000", turnFor(2))).toBeUndefined();
      expect((await ctx.store().getSession(tenant.id, session.id))?.turnCount).toBe(1);
    });
  });

  describe("feedback", () => {
    it("upserts one rating per message, keeping createdAt", async () => {
      const tenant = await ctx.tenant();
      const session = await newSession(tenant);
      const first = await ctx.store().putFeedback(tenant.id, { sessionId: session.id, messageId: "m1", rating: "thumbs_up" });
      expect(first).toMatchObject({ sessionId: session.id, messageId: "m1", rating: "thumbs_up", comment: undefined });
      const second = await ctx.store().putFeedback(tenant.id, {
        sessionId: session.id,
        messageId: "m1",
        rating: "thumbs_down",
        comment: "wrong file",
      });
      expect(second).toMatchObject({ rating: "thumbs_down", comment: "wrong file", createdAt: first!.createdAt });
      await ctx.store().putFeedback(tenant.id, { sessionId: session.id, messageId: "m2", rating: "thumbs_up" });
      const list = await ctx.store().listFeedback(tenant.id, session.id);
      expect(list?.map((f) => [f.messageId, f.rating])).toEqual([
        ["m1", "thumbs_down"],
        ["m2", "thumbs_up"],
      ]);
    });

    it("another tenant's session behaves as unknown", async () => {
      const [tenant, other] = [await ctx.tenant(), await ctx.tenant()];
      const session = await newSession(tenant);
      expect(await ctx.store().putFeedback(other.id, { sessionId: session.id, messageId: "m1", rating: "up" })).toBeUndefined();
      expect(await ctx.store().listFeedback(other.id, session.id)).toBeUndefined();
      expect(await ctx.store().listFeedback(tenant.id, session.id)).toEqual([]);
    });
  });
}
