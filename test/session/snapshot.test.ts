import { describe, expect, it } from "vitest";
import { joinTextParts, sharedJson } from "../../src/domain/index.ts";
import type { ModelMessage } from "../../src/models/index.ts";
import { decodeSnapshot, encodeSnapshot, type SessionSnapshot } from "../../src/session/snapshot.ts";

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

describe("session snapshots", () => {
  const runningTurn = { messageId: "m1", userContent: "z".repeat(SHARED_FROM * 2), mode: "react", startedAt: 1 } as const;
  const snapshot = (history: ModelMessage[]): SessionSnapshot => ({
    version: 1,
    model: "scripted",
    environmentId: "env",
    projectContext: ["ctx"],
    maxContextTokens: 1000,
    permissions: [],
    tools: [{ name: "read", description: "reads", parametersSchema: { type: "object" }, timeoutMs: 1000, category: "unspecified" }],
    history,
    lastSeq: 7,
    runningTurn,
  });

  it("decode(encode(s)) is s, with binary parts and multi-megabyte messages", async () => {
    const history: ModelMessage[] = [
      { role: "user", parts: [{ type: "text", text: "w".repeat(4_000_000) }] },
      { role: "assistant", parts: [{ type: "text", text: 'a "quoted" answer' }] },
      { role: "user", parts: [{ type: "image", mediaType: "image/png", data: new Uint8Array([1, 2, 3, 250]) }] },
    ];
    const encoded = await encodeSnapshot(snapshot(history));
    expect(decodeSnapshot(encoded.toString())).toEqual(snapshot(history));
  });

  it("encodes a message once: a later snapshot reuses the same bytes", async () => {
    const message = { role: "user", parts: [{ type: "text", text: "v".repeat(SHARED_FROM) }] } as ModelMessage;
    const first = (await encodeSnapshot(snapshot([message]))).parts;
    const second = (await encodeSnapshot(snapshot([message, { role: "assistant", parts: [{ type: "text", text: "ok" }] } as ModelMessage]))).parts;
    const bytesOf = (parts: readonly (string | Uint8Array)[]) => parts.filter((p) => p instanceof Uint8Array);
    // The running turn and the message, each the same object in both snapshots.
    expect(bytesOf(first)).toHaveLength(2);
    expect(bytesOf(second)[0]).toBe(bytesOf(first)[0]);
    expect(bytesOf(second)[1]).toBe(bytesOf(first)[1]);
  });
});
