import { randomUUID } from "node:crypto";
import { afterPendingIo } from "./loop-turn.ts";

/**
 * A large text held as parts: strings, or UTF-8 bytes that may live in shared memory. A store
 * joins the parts where that costs the event loop nothing (SQLite joins them in its own
 * thread, and shared bytes reach that thread without a copy), so that a multi-megabyte
 * message or state is never built as one string on the event loop.
 */
export class TextParts {
  readonly parts: readonly (string | Uint8Array)[];

  constructor(parts: readonly (string | Uint8Array)[]) {
    this.parts = parts;
  }

  /** The whole text: a pass over all of it, for stores that need one string. */
  toString(): string {
    return joinTextParts(this.parts);
  }
}

/** A text a store writes: one string, or parts it joins. */
export type StoredText = string | TextParts;

/** The text of `parts` (bytes are UTF-8). */
export function joinTextParts(parts: readonly (string | Uint8Array)[]): string {
  return parts.map((part) => (typeof part === "string" ? part : Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString("utf8"))).join("");
}

/** The UTF-8 of `parts` in one buffer: a copy of the byte parts, without decoding them. */
export function textPartsUtf8(parts: readonly (string | Uint8Array)[]): Buffer {
  return Buffer.concat(parts.map((part) => (typeof part === "string" ? Buffer.from(part, "utf8") : part)));
}

/**
 * Long strings are escaped this many characters at a time, an event-loop turn apart. A slice
 * this long is a large object to V8, which young-generation collections never copy; shorter
 * slices would be copied by every collection while a multi-megabyte message is escaped.
 */
const SLICE_CHARS = 256 * 1024;

/** `text` as the inside of a JSON string, escaped a slice per event-loop turn. */
async function escapeInSlices(text: string): Promise<string[]> {
  const slices: string[] = [];
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + SLICE_CHARS, text.length);
    // Never between the halves of a surrogate pair: each half alone would be escaped.
    const last = text.charCodeAt(end - 1);
    if (last >= 0xd800 && last <= 0xdbff && end < text.length) end++;
    slices.push(JSON.stringify(text.slice(start, end)).slice(1, -1));
    start = end;
    await afterPendingIo();
  }
  return slices;
}

/**
 * The JSON of `value` (as `JSON.stringify(value, replacer)` makes it): a string when shorter
 * than `sharedFrom` characters, else UTF-8 bytes in shared memory, which another thread reads
 * without a copy. Strings of `sharedFrom` characters or more are escaped and copied a slice
 * per event-loop turn, so that a multi-megabyte text never holds the loop for a whole pass.
 */
export async function sharedJson(value: unknown, replacer: (key: string, value: unknown) => unknown, sharedFrom: number): Promise<string | Uint8Array> {
  const marker = `"${randomUUID()}:`;
  const long: string[] = [];
  const json = JSON.stringify(value, (key, v) => {
    const out = replacer(key, v);
    if (typeof out !== "string" || out.length < sharedFrom) return out;
    long.push(out);
    return `${marker.slice(1)}${long.length - 1}`;
  });
  if (long.length === 0) return json.length < sharedFrom ? json : sharedUtf8(json);
  // The JSON as pieces: its own text between markers, and each long string's escaped slices.
  const [first = "", ...rest] = json.split(marker);
  const pieces: string[] = [first];
  for (const piece of rest) {
    const end = piece.indexOf('"');
    pieces.push('"', ...(await escapeInSlices(long[Number(piece.slice(0, end))]!)), '"', piece.slice(end + 1));
  }
  let size = 0;
  for (const piece of pieces) size += Buffer.byteLength(piece, "utf8");
  const bytes = Buffer.from(new SharedArrayBuffer(size));
  let at = 0;
  for (const piece of pieces) {
    at += bytes.write(piece, at, "utf8");
    if (piece.length >= SLICE_CHARS) await afterPendingIo();
  }
  return new Uint8Array(bytes.buffer, 0, size);
}

/** `text` as UTF-8 bytes in shared memory: posted to another thread, they are shared rather than copied. */
export function sharedUtf8(text: string): Uint8Array {
  const bytes = new Uint8Array(new SharedArrayBuffer(Buffer.byteLength(text, "utf8")));
  Buffer.from(bytes.buffer, 0, bytes.byteLength).write(text, "utf8");
  return bytes;
}
