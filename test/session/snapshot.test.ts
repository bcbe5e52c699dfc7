import { describe, expect, it } from "vitest";
import { joinTextParts, sharedJson, TextParts } from "../../src/domain/index.ts";
import type { ModelMessage } from "../../src/models/index.ts";
import { loadSnapshot } from "../../src/session/load-snapshot.ts";
import type { SessionSnapshot } from "../../src/session/snapshot.ts";
import { StoredHistory, stateWrite } from "../../src/session/stored-history.ts";
import { stateWriteParts } from "../../src/store/index.ts";
import { MemoryPersistence } from "../support/memory-persistence.ts";

const SHARED_FROM = 64 * 1024;
const text = (value: string | Uint8Array): string => joinTextParts([value]);
const plain = (_key: string, value: unknown): unknown => value;

describe("sharedJson", () => {
  const long = "x".repeat(SHARED_FROM);
  const cases: [string, unknown][] = [
    ["a small value", { a: 1, b: ["two", null] }],
    ["a long plain string", { role: "user", parts: [{ type: "text", text: long }] }],
    ["long strings needing escapes", { a: `${long}"quoted"\\`, b: `${long}\n\u0001` }],
    ["long non-ASCII and surrogate pairs", { a: `${long}é中😀`, b: `${"é".repeat(SHARED_FROM)}` }],
    ["a lone surrogate", { a: `${long}\ud800` }],
    ["surrogate pairs across the escaping slices", { a: "😀".repeat(300_000), b: `${"y".repeat(256 * 1024 - 1)}😀\ud800x` }],
    ["several long strings among small ones", [long, "s", { k: `${long}y`, n: 3 }, `${long}z`]],
    ["a long string as the root", long],
    ["a string that looks like the marker", { a: long, b: '"00000000-0000-0000-0000-000000000000:0' }],
  ];
  for (const [name, value] of cases) {
    it(`is JSON.stringify's output for ${name}`, async () => {
      const encoded = await sharedJson(value, plain, SHARED_FROM);
      expect(text(encoded)).toBe(JSON.stringify(value));
    });
  }

  it("keeps long JSON in shared memory and short JSON as a string", async () => {
    const long = await sharedJson({ t: "x".repeat(SHARED_FROM) }, plain, SHARED_FROM);
    expect(long).toBeInstanceOf(Uint8Array);
    expect((long as Uint8Array).buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(typeof (await sharedJson({ t: "short" }, plain, SHARED_FROM))).toBe("string");
  });

  it("applies the replacer before deciding what is escaped in slices", async () => {
    const replacer = (_key: string, value: unknown): unknown => (value === "swap" ? "y".repeat(SHARED_FROM) : value);
    expect(text(await sharedJson({ a: "swap", b: "keep" }, replacer, SHARED_FROM))).toBe(JSON.stringify({ a: "y".repeat(SHARED_FROM), b: "keep" }));
  });
});

describe("session state: a state row and message rows", () => {
  const tenant = "t1";
  const runningTurn = { messageId: "m1", userContent: "z".repeat(SHARED_FROM * 2), mode: "react", startedAt: 1 } as const;
  const startHistory: ModelMessage[] = [{ role: "user", parts: [{ type: "text", text: "from the start" }] }];
  const snapshot = (history: readonly ModelMessage[]): SessionSnapshot => ({
    version: 1,
    model: "scripted",
    environmentId: "env",
    projectContext: ["ctx"],
    maxContextTokens: 1000,
    permissions: [],
    tools: [{ name: "read", description: "reads", parametersSchema: { type: "object" }, timeoutMs: 1000, category: "unspecified" }],
    history: [...history],
    startHistory,
    lastSeq: 7,
    runningTurn,
  });
  const message = (text: string): ModelMessage => ({ role: "assistant", parts: [{ type: "text", text }] });

  /** A session in memory persistence, and a write of `history` through `stored` (committed unless told). */
  async function newSession(): Promise<{ persistence: MemoryPersistence; id: string }> {
    const persistence = new MemoryPersistence();
    const id = `s-${Math.random()}`;
    await persistence.createSession({ id, tenantId: tenant, environmentId: "env", model: "scripted" });
    return { persistence, id };
  }
  async function write(at: { persistence: MemoryPersistence; id: string }, stored: StoredHistory, history: readonly ModelMessage[]) {
    const { write: state, commit } = await stateWrite(stored, snapshot(history));
    await at.persistence.saveState(tenant, at.id, state);
    commit();
    return stateWriteParts(state);
  }
  const load = async (at: { persistence: MemoryPersistence; id: string }) =>
    loadSnapshot(at.persistence, tenant, at.id, (await at.persistence.findSession(tenant, at.id))!.state!);

  it("load(write(s)) is s, with binary parts and multi-megabyte messages", async () => {
    const at = await newSession();
    const history: ModelMessage[] = [
      { role: "user", parts: [{ type: "text", text: "w".repeat(4_000_000) }] },
      message('a "quoted" answer'),
      { role: "user", parts: [{ type: "image", mediaType: "image/png", data: new Uint8Array([1, 2, 3, 250]) }] },
    ];
    const written = await write(at, new StoredHistory(), history);
    // The multi-megabyte message is held as shared bytes for the store's thread.
    expect(written.messages[0]!.messages[0]).toBeInstanceOf(TextParts);
    expect((await load(at))?.snapshot).toEqual(snapshot(history));
  });

  it("a write stores the messages after those stored, and the start history once; the state row does not grow with the history", async () => {
    const at = await newSession();
    const stored = new StoredHistory();
    const history = [message("one"), message("two")];
    const first = await write(at, stored, history);
    expect(first.messages.map((r) => [r.list, r.from, r.messages.length])).toEqual([
      ["history", 0, 2],
      ["start", 0, 1],
    ]);
    for (let i = 0; i < 50; i++) history.push(message(`more ${i}`));
    const later = await write(at, stored, history);
    history.push(message("last"));
    const last = await write(at, stored, history);
    expect(last.messages).toEqual([{ list: "history", from: 52, messages: [JSON.stringify(message("last"))] }]);
    expect(String(last.state).length).toBe(String(later.state).length);
    expect(await write(at, stored, history)).toMatchObject({ messages: [] });
    expect((await load(at))?.snapshot).toEqual(snapshot(history));
  });

  it("a rewritten history replaces the rows from its first new message; a failed write is sent again", async () => {
    const at = await newSession();
    const stored = new StoredHistory();
    const history = [message("a"), message("b"), message("c")];
    await write(at, stored, history);
    // Compaction, rollback: new objects from some position on, maybe fewer.
    const rewritten = [history[0]!, message("summary")];
    const { write: state } = await stateWrite(stored, snapshot(rewritten)); // never stored: not committed
    expect(stateWriteParts(state).messages[0]).toMatchObject({ list: "history", from: 1 });
    const again = await write(at, stored, rewritten);
    expect(again.messages).toEqual([{ list: "history", from: 1, messages: [JSON.stringify(message("summary"))], truncate: true }]);
    expect((await at.persistence.readMessages(tenant, at.id))?.history).toHaveLength(2);
    expect((await load(at))?.snapshot.history).toEqual(rewritten);
  });

  it("a state stored whole, history inline (before message rows), is read, and its next write stores every row", async () => {
    const at = await newSession();
    const history = [message("old"), { role: "user", parts: [{ type: "image", mediaType: "image/png", data: new Uint8Array([9]) }] } as ModelMessage];
    const whole = JSON.stringify(snapshot(history), (_key, v: unknown) => (v instanceof Uint8Array ? { $bytes: Buffer.from(v).toString("base64") } : v));
    await at.persistence.saveState(tenant, at.id, whole);
    const loaded = await load(at);
    expect(loaded?.snapshot).toEqual(snapshot(history));
    const next = await write(at, loaded!.stored, loaded!.snapshot.history);
    expect(next.messages.map((r) => [r.list, r.from, r.messages.length])).toEqual([
      ["history", 0, 2],
      ["start", 0, 1],
    ]);
    expect((await load(at))?.snapshot).toEqual(snapshot(history));
  });

  it("a state row whose message rows are missing cannot be loaded", async () => {
    const at = await newSession();
    await write(at, new StoredHistory(), [message("a"), message("b")]);
    at.persistence.sessions.get(at.id)!.messages.history.pop();
    expect(await load(at)).toBeUndefined();
  });
});
