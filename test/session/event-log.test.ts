import { describe, expect, it } from "vitest";
import { decodeDeltaResponse, encodeResponse } from "../../src/rpc/index.ts";
import { EventLog } from "../../src/session/event-log.ts";
import type { LoggedEvent, SessionEvent } from "../../src/session/index.ts";

const logged = (seq: number, event: SessionEvent, turnIndex?: number): LoggedEvent => {
  const sequenced = { seq, event, sessionId: "s1", at: 1_700_000_000_000 + seq, ...(turnIndex !== undefined ? { turnIndex } : {}) };
  return { ...sequenced, bytes: encodeResponse(sequenced) };
};

const delta = (seq: number, text: string): LoggedEvent => logged(seq, { type: "text_delta", messageId: "m1", text }, 1);

describe("EventLog", () => {
  it("gives back every entry after a seq with its bytes, time, turn and event, deltas decoded from their bytes", () => {
    const log = new EventLog(100, 1, { sessionId: "s1", decodeDelta: decodeDeltaResponse });
    const started = logged(1, { type: "session_started", sessionId: "s1", model: "m", permissions: [] });
    log.append(started);
    for (let seq = 2; seq <= 50; seq++) log.append(delta(seq, `word ${seq} `));
    const after = log.after(10);
    expect(after.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 11));
    const first = after[0]!;
    expect(first.event).toEqual({ type: "text_delta", messageId: "m1", text: "word 11 " });
    expect(first.turnIndex).toBe(1);
    expect(first.sessionId).toBe("s1");
    expect(first.at).toBe(1_700_000_000_011);
    expect([...first.bytes]).toEqual([...delta(11, "word 11 ").bytes]);
    const all = log.after(0);
    expect(all[0]!.event).toEqual(started.event);
    expect(all[0]!.turnIndex).toBeUndefined();
  });

  it("hands the unflushed entries to the store, and keeps them until they are stored", () => {
    const log = new EventLog(5, 1, { sessionId: "s1", decodeDelta: decodeDeltaResponse });
    for (let seq = 1; seq <= 20; seq++) log.append(delta(seq, `t${seq}`));
    const batch = log.unflushed();
    expect(batch.map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(batch.every((e) => e.event === undefined)).toBe(true);
    expect([...batch[7]!.bytes]).toEqual([...delta(8, "t8").bytes]);
    // Nothing is dropped before it is stored, whatever the capacity.
    expect(log.completeFrom).toBe(1);
    log.flushed(12);
    expect(log.unflushed().map((e) => e.seq)).toEqual([13, 14, 15, 16, 17, 18, 19, 20]);
    expect(log.completeFrom).toBe(13);
    log.flushed(8);
    expect(log.after(0).map((e) => e.seq)).toEqual([16, 17, 18, 19, 20]);
    expect(log.completeFrom).toBe(16);
    expect(log.unflushed()).toEqual([]);
  });

  it("keeps every byte across segment growth, large responses and trimming", () => {
    const log = new EventLog(300, 1, { sessionId: "s1", decodeDelta: decodeDeltaResponse });
    const texts: string[] = [];
    for (let seq = 1; seq <= 1200; seq++) {
      // Mostly small deltas; now and then one larger than a whole segment, or one kept as its own segment.
      const text = seq % 97 === 0 ? "x".repeat(70_000 + seq) : seq % 89 === 0 ? "y".repeat(20_000) : `delta number ${seq} `.repeat(1 + (seq % 7));
      texts[seq] = text;
      log.append(delta(seq, text));
      if (seq % 50 === 0) log.flushed(log.unflushed().length);
    }
    const kept = log.after(0);
    expect(kept.length).toBe(300);
    expect(kept[0]!.seq).toBe(901);
    for (const e of kept) expect(e.event).toEqual({ type: "text_delta", messageId: "m1", text: texts[e.seq] });
  });

  it("keeps delta objects when it has no decoder", () => {
    const log = new EventLog(10);
    log.append(delta(1, "hello"));
    expect(log.after(0)[0]!.event).toEqual({ type: "text_delta", messageId: "m1", text: "hello" });
  });
});
