/**
 * Reads protobuf field tags and lengths without decoding any message: where each field of a
 * message starts and ends, as far as it parses.
 */
import { WireType } from "@bufbuild/protobuf/wire";
import type { ChunkedBytes } from "./chunked-bytes.ts";

/** Where the last `readVarint` stopped (module state: the scan allocates nothing per field). */
let cursor = 0;

/**
 * The varint at `pos` (its end in `cursor`); -1 past `end` or longer than 10 bytes. Values
 * beyond 2^53 come out inexact: only keys and lengths are used, and those never are that large.
 */
function readVarint(bytes: ChunkedBytes, pos: number, end: number): number {
  let value = 0;
  let scale = 1;
  for (let i = pos; i < end && i < pos + 10; i++) {
    const byte = bytes.at(i);
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      cursor = i + 1;
      return value;
    }
    scale *= 128;
  }
  return -1;
}

/** Groups nested deeper than this make a message unparsable here (the decoder has its own limit). */
const MAX_GROUP_DEPTH = 64;

/**
 * Where the field whose key was just read (`key`; its value starts at `cursor`) ends; -1
 * when it does not parse. Groups (none in this schema, but allowed as unknown fields) end at
 * their matching end-group key.
 */
function endOfField(bytes: ChunkedBytes, key: number, end: number, depth = 0): number {
  const wireType = key % 8;
  const valueStart = cursor;
  let next: number;
  if (wireType === WireType.Varint) next = readVarint(bytes, valueStart, end) < 0 ? -1 : cursor;
  else if (wireType === WireType.Bit64) next = valueStart + 8;
  else if (wireType === WireType.Bit32) next = valueStart + 4;
  else if (wireType === WireType.LengthDelimited) {
    const length = readVarint(bytes, valueStart, end);
    next = length < 0 ? -1 : cursor + length;
  } else if (wireType === WireType.StartGroup && depth < MAX_GROUP_DEPTH) {
    next = -1;
    for (let pos = valueStart; pos < end; ) {
      const inner = readVarint(bytes, pos, end);
      if (inner < 0) break;
      if (inner % 8 === WireType.EndGroup) {
        if (Math.floor(inner / 8) === Math.floor(key / 8)) next = cursor;
        break;
      }
      pos = endOfField(bytes, inner, end, depth + 1);
      if (pos < 0) break;
    }
  } else next = -1;
  return next > end ? -1 : next;
}

/**
 * Walks the fields of the message in `bytes[start, end)`, calling `visit` with each one's
 * number, wire type, start (its tag), value start and end. Returns where it stopped: `end`, or
 * the start of the first field that does not parse (a decoder reads, and pays for, every field
 * before it, then fails there).
 */
export function walkFields(
  bytes: ChunkedBytes,
  start: number,
  end: number,
  visit: (number: number, wireType: number, fieldStart: number, valueStart: number, end: number) => void,
): number {
  for (let pos = start; pos < end; ) {
    const key = readVarint(bytes, pos, end);
    if (key < 0) return pos;
    const next = endOfField(bytes, key, end);
    if (next < 0) return pos;
    // A length-delimited value starts after its length, where `cursor` is now.
    visit(Math.floor(key / 8), key % 8, pos, key % 8 === WireType.LengthDelimited ? cursor : next, next);
    pos = next;
  }
  return end;
}

/** How many length-delimited `field` entries the message in `bytes[start, end)` has, as far as it parses. */
export function countEntries(bytes: ChunkedBytes, start: number, end: number, field: number): number {
  let count = 0;
  walkFields(bytes, start, end, (number, wireType) => {
    if (number === field && wireType === WireType.LengthDelimited) count++;
  });
  return count;
}
