/**
 * The protobuf scanner: finds the tools lists over the cap in a binary message from its field
 * tags and lengths (no message is decoded) and cuts each to `maxTools + 1` tools, as parts:
 * views of the original bytes and new field headers, so nothing of a large message is copied.
 */
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { ChunkedBytes, type MessageCut } from "./chunked-bytes.ts";
import { SESSION_REQUEST_SCREENED, type Shape } from "./carriers.ts";
import { Cut, pathsUnder } from "./list-cut.ts";
import { Parts } from "./message-parts.ts";
import { countEntries, walkFields } from "./protobuf-fields.ts";

/** A tool takes at least two bytes (tag and length): a message this short holds no list over the cap. */
export const tooShortForOverCap = (messageLength: number, maxTools: number): boolean => messageLength < 2 * (maxTools + 1);

/**
 * Adds the tools of every list of `shape` in the message in `bytes[start, end)` to `totals`, by
 * path (field numbers joined with `/`), as a decoder would keep them: occurrences of one field
 * merge (lists included), and a rival member of its oneof read in between discards it.
 */
function countTools(bytes: ChunkedBytes, start: number, end: number, shape: Shape, prefix: string, totals: Map<string, number>): void {
  walkFields(bytes, start, end, (number, wireType, _fieldStart, valueStart, valueEnd) => {
    for (const rival of shape.discards.get(number) ?? []) {
      for (const path of pathsUnder(totals.keys(), `${prefix}${rival}`)) totals.delete(path);
    }
    const carried = shape.carried.get(number);
    if (carried === undefined || wireType !== WireType.LengthDelimited) return;
    const path = `${prefix}${number}`;
    if (typeof carried === "number") totals.set(path, (totals.get(path) ?? 0) + countEntries(bytes, valueStart, valueEnd, carried));
    else countTools(bytes, valueStart, valueEnd, carried, `${path}/`, totals);
  });
}

/**
 * The message in `bytes[start, end)` with the lists of `cut` shortened, as parts: every other
 * field as it was, each field on the way to a cut list with a new tag and length, and bytes
 * that do not parse kept as they are (the decoder still fails on them).
 */
function cutLists(bytes: ChunkedBytes, start: number, end: number, shape: Shape, prefix: string, cut: Cut): Uint8Array[] {
  const parts = new Parts(bytes);
  const stop = walkFields(bytes, start, end, (number, wireType, fieldStart, valueStart, fieldEnd) => {
    for (const rival of shape.discards.get(number) ?? []) cut.refill(`${prefix}${rival}`);
    const carried = shape.carried.get(number);
    const path = `${prefix}${number}`;
    if (carried === undefined || wireType !== WireType.LengthDelimited || !cut.through.has(path)) {
      parts.keep(fieldStart, fieldEnd);
      return;
    }
    const inner =
      typeof carried === "number"
        ? withToolsCut(bytes, valueStart, fieldEnd, carried, path, cut)
        : cutLists(bytes, valueStart, fieldEnd, carried, `${path}/`, cut);
    const length = inner.reduce((n, p) => n + p.byteLength, 0);
    parts.add([new BinaryWriter().tag(number, WireType.LengthDelimited).uint32(length).finish()]);
    parts.add(inner);
  });
  parts.keep(stop, end);
  return parts.done();
}

/** The message in `bytes[start, end)` without the `toolsField` entries that `cut` does not keep for `path`. */
function withToolsCut(bytes: ChunkedBytes, start: number, end: number, toolsField: number, path: string, cut: Cut): Uint8Array[] {
  const parts = new Parts(bytes);
  const stop = walkFields(bytes, start, end, (number, wireType, fieldStart, _valueStart, fieldEnd) => {
    if (number !== toolsField || wireType !== WireType.LengthDelimited || cut.take(path)) parts.keep(fieldStart, fieldEnd);
  });
  parts.keep(stop, end);
  return parts.done();
}

/**
 * The message in `bytes[start, end)` with every tools list of `shape` that a decoder would
 * end up with more than `maxTools` tools in cut to `maxTools + 1`, as parts (views of `bytes`
 * and new field headers); undefined when no list is over the cap.
 */
function cutParts(bytes: ChunkedBytes, start: number, end: number, maxTools: number, shape: Shape): Uint8Array[] | undefined {
  if (tooShortForOverCap(end - start, maxTools)) return undefined;
  const totals = new Map<string, number>();
  countTools(bytes, start, end, shape, "", totals);
  const overCap = [...totals].filter(([, tools]) => tools > maxTools).map(([path]) => path);
  return overCap.length === 0 ? undefined : cutLists(bytes, start, end, shape, "", new Cut(overCap, maxTools));
}

/** The cut of binary messages of `shape`. */
export const binaryCut =
  (shape: Shape, maxTools: number): MessageCut =>
  (bytes, start, end) =>
    cutParts(bytes, start, end, maxTools, shape);

/**
 * `request` (a SessionRequest's bytes) with every tools list over `maxTools` cut to
 * `maxTools + 1` entries; `request` itself when none is.
 */
export function cutToolLists(request: Uint8Array, maxTools: number): Uint8Array {
  const parts = cutParts(new ChunkedBytes([request]), 0, request.byteLength, maxTools, SESSION_REQUEST_SCREENED.shape);
  return parts === undefined ? request : Buffer.concat(parts);
}
