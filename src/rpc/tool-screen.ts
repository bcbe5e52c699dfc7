/**
 * Screens the requests that can carry tools before connect decodes them: StreamSession's
 * `SessionRequest`s, SendToSession's `request` (a SessionRequest one level down) and
 * AttachSession's `start`. A start, user_message or register_tools carrying more tools than one
 * request may is cut to its first `maxTools + 1` tools: the session then refuses it as over the
 * cap, as it would the whole message, and decoding stays bounded. Decoding costs about 2 µs a
 * tool, and a 4 MiB message holds some 350,000 minimal tools: most of a second of the event loop.
 *
 * The binary scan reads field tags and lengths only (no message is decoded); a JSON message is
 * parsed once when it has enough objects to hold an over-cap list. A compressed message is
 * expanded first (gzip, br) and compressed again only when cut. What follows bytes
 * that do not parse is kept as it is: the decoder fails there, after the (cut) lists before it.
 */

import * as zlib from "node:zlib";
import type { DescField } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  AgentService,
  AttachSessionRequestSchema,
  RegisterToolsSchema,
  SendToSessionRequestSchema,
  SessionRequestSchema,
  StartSessionSchema,
  UserMessageSchema,
} from "../gen/roz/v1/agent_pb.js";
import { RozError } from "../errors/index.ts";
import { MAX_JSON_DEPTH, tooDeepInText } from "../models/index.ts";
import { toConnectError } from "./connect-errors.ts";
import { ENVELOPE_HEADER_BYTES, writeEnvelopeHeader } from "./envelope-header.ts";

/** A field whose message carries tools: the `tools` field of that message, or carriers one level further down. */
type Carrier = { field: DescField; tools: DescField } | { field: DescField; within: readonly Carrier[] };

/** SessionRequest: its start, user_message and register_tools. */
const SESSION_REQUEST: readonly Carrier[] = [
  { field: SessionRequestSchema.field.start, tools: StartSessionSchema.field.tools },
  { field: SessionRequestSchema.field.userMessage, tools: UserMessageSchema.field.tools },
  { field: SessionRequestSchema.field.registerTools, tools: RegisterToolsSchema.field.tools },
];

const methodPath = (name: string): string => `/${AgentService.typeName}/${name}`;

/**
 * The binary form of carriers: field number → the number of the `tools` field in that field's
 * message, or the shape one level further down; and, per field number, the carriers it
 * discards as a rival member of their oneof.
 */
interface Shape {
  carried: Map<number, number | Shape>;
  discards: Map<number, number[]>;
}

function shapeOf(carriers: readonly Carrier[]): Shape {
  const shape: Shape = { carried: new Map(), discards: new Map() };
  for (const carrier of carriers) {
    shape.carried.set(carrier.field.number, "within" in carrier ? shapeOf(carrier.within) : carrier.tools.number);
    for (const rival of carrier.field.oneof?.fields ?? []) {
      if (rival.number === carrier.field.number) continue;
      shape.discards.set(rival.number, [...(shape.discards.get(rival.number) ?? []), carrier.field.number]);
    }
  }
  return shape;
}

/** The names a JSON message may use for a field (its JSON name, or its name in the .proto). */
const namesOf = (field: DescField): string[] => [...new Set([field.jsonName, field.name])];

/** A screened request's carriers, and their binary form. */
interface Screened {
  carriers: readonly Carrier[];
  shape: Shape;
}

const screened = (carriers: readonly Carrier[]): Screened => ({ carriers, shape: shapeOf(carriers) });

const SESSION_REQUEST_SCREENED = screened(SESSION_REQUEST);

/** What the request of each method whose requests can carry tools carries, by HTTP path. */
const SCREENED_OF_PATH = new Map<string, Screened>([
  [methodPath(AgentService.method.streamSession.name), SESSION_REQUEST_SCREENED],
  [methodPath(AgentService.method.sendToSession.name), screened([{ field: SendToSessionRequestSchema.field.request, within: SESSION_REQUEST }])],
  [methodPath(AgentService.method.attachSession.name), screened([{ field: AttachSessionRequestSchema.field.start, tools: StartSessionSchema.field.tools }])],
]);

/** A call without tools lists: its JSON messages are screened for their depth only. */
const DEPTH_ONLY = screened([]);

/** An RPC's route (`/package.Service/Method`), not a REST one. */
const RPC_PATH = /^\/\w+(\.\w+)+\/\w+$/;

/** Enveloped messages (gRPC, gRPC-Web, Connect streaming), binary or JSON. */
const BINARY_STREAM = /^application\/(grpc(-web)?(\+proto)?|connect\+proto)(;|$)/i;
const JSON_STREAM = /^application\/(grpc(-web)?|connect)\+json(;|$)/i;
/** A Connect unary call: the body is the one message. */
const BINARY_UNARY = /^application\/proto(;|$)/i;
const JSON_UNARY = /^application\/json(;|$)/i;

/** Cuts a message in `bytes[start, end)`: its parts when a tools list was over the cap, else undefined. */
type MessageCut = (bytes: ChunkedBytes, start: number, end: number) => Uint8Array[] | undefined;

/**
 * A message's bytes as they arrived, in several chunks, read by absolute position without
 * joining them (joining would copy a large message once more before connect copies it).
 * Reads go mostly forward: the chunk of the last read is where the next one starts looking.
 */
class ChunkedBytes {
  readonly length: number;
  readonly #chunks: readonly Uint8Array[];
  readonly #starts: number[] = [];
  #index = 0;
  /** The chunk of the last read, and where it starts and ends. */
  #chunk: Uint8Array;
  #chunkStart = 0;
  #chunkEnd: number;

  constructor(chunks: readonly Uint8Array[]) {
    this.#chunks = chunks;
    let start = 0;
    for (const chunk of chunks) {
      this.#starts.push(start);
      start += chunk.byteLength;
    }
    this.length = start;
    this.#chunk = chunks[0] ?? new Uint8Array(0);
    this.#chunkEnd = this.#chunk.byteLength;
  }

  at(pos: number): number {
    if (pos < this.#chunkStart || pos >= this.#chunkEnd) this.#seek(pos);
    return this.#chunk[pos - this.#chunkStart]!;
  }

  /** The bytes of `[start, end)` as views of the chunks (no copy). */
  slice(start: number, end: number): Uint8Array[] {
    const views: Uint8Array[] = [];
    for (let pos = start; pos < end; ) {
      this.#seek(pos);
      const to = Math.min(end, this.#chunkEnd);
      views.push(this.#chunk.subarray(pos - this.#chunkStart, to - this.#chunkStart));
      pos = to;
    }
    return views;
  }

  #seek(pos: number): void {
    let i = this.#index;
    while (i > 0 && pos < this.#starts[i]!) i--;
    while (i < this.#chunks.length - 1 && pos >= this.#starts[i]! + this.#chunks[i]!.byteLength) i++;
    this.#index = i;
    this.#chunk = this.#chunks[i]!;
    this.#chunkStart = this.#starts[i]!;
    this.#chunkEnd = this.#chunkStart + this.#chunk.byteLength;
  }
}

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
function walkFields(
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
function countEntries(bytes: ChunkedBytes, start: number, end: number, field: number): number {
  let count = 0;
  walkFields(bytes, start, end, (number, wireType) => {
    if (number === field && wireType === WireType.LengthDelimited) count++;
  });
  return count;
}

/** A tool takes at least two bytes (tag and length): a message this short holds no list over the cap. */
const tooShortForOverCap = (messageLength: number, maxTools: number): boolean => messageLength < 2 * (maxTools + 1);

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

/** The paths of `paths` that are `path` or below it. */
const pathsUnder = (paths: Iterable<string>, path: string): string[] => [...paths].filter((p) => p === path || p.startsWith(`${path}/`));

/** The parts of a rewritten message, in order: ranges of the original (adjacent ones merged) and new bytes. */
class Parts {
  readonly #bytes: ChunkedBytes;
  readonly #parts: Uint8Array[] = [];
  #from = -1;
  #to = -1;

  constructor(bytes: ChunkedBytes) {
    this.#bytes = bytes;
  }

  keep(start: number, end: number): void {
    if (this.#to === start) {
      this.#to = end;
      return;
    }
    this.#flush();
    this.#from = start;
    this.#to = end;
  }

  add(parts: readonly Uint8Array[]): void {
    this.#flush();
    appendAll(this.#parts, parts);
  }

  done(): Uint8Array[] {
    this.#flush();
    return this.#parts;
  }

  #flush(): void {
    if (this.#from >= 0) appendAll(this.#parts, this.#bytes.slice(this.#from, this.#to));
    this.#from = -1;
    this.#to = -1;
  }
}

/**
 * Appends `items` one by one: a client decides how many chunks a message arrives in, and a
 * spread (`push(...items)`) throws beyond some 100,000 of them.
 */
function appendAll<T>(target: T[], items: readonly T[]): void {
  for (const item of items) target.push(item);
}

/**
 * The lists a cut shortens (by path), each to `maxTools + 1` tools over the occurrences a
 * decoder merges, and every path that leads to one.
 */
class Cut {
  readonly through = new Set<string>();
  readonly #left = new Map<string, number>();
  readonly #keep: number;

  constructor(overCap: readonly string[], maxTools: number) {
    this.#keep = maxTools + 1;
    for (const path of overCap) {
      this.#left.set(path, this.#keep);
      const numbers = path.split("/");
      for (let i = 1; i <= numbers.length; i++) this.through.add(numbers.slice(0, i).join("/"));
    }
  }

  /** Whether the next tool of the list at `path` is kept. */
  take(path: string): boolean {
    const left = this.#left.get(path) ?? 0;
    if (left <= 0) return false;
    this.#left.set(path, left - 1);
    return true;
  }

  /** What a decoder discarded at and below `path` (a rival oneof member came): lists there start anew. */
  refill(path: string): void {
    for (const p of pathsUnder(this.#left.keys(), path)) this.#left.set(p, this.#keep);
  }
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
const binaryCut =
  (shape: Shape, maxTools: number): MessageCut =>
  (bytes, start, end) =>
    cutParts(bytes, start, end, maxTools, shape);

/** What a JSON scan looks for at a value: the carriers of an object, the `tools` of a carrier's object, or the list itself. */
type JsonLevel = { carriers: readonly Carrier[] } | { tools: DescField } | { list: true } | undefined;

/** Thrown when a text is not the JSON a scan expects: it passes on as it came, for connect to judge. */
const NOT_JSON = new Error("not the JSON the tool-list scan expects");
/** Thrown when a text nests deeper than the scan's `maxDepth`: the message is refused. */
const TOO_DEEP = new Error("JSON nested too deep");

/**
 * A scan of JSON text (bytes) for the tools lists that `carriers` name, without parsing it:
 * the byte ranges to drop so that each list over the cap keeps its first `maxTools + 1`
 * elements. About 3 times cheaper than `JSON.parse` on 200,000 tools, and it allocates
 * nothing per tool. Duplicate keys need nothing: each occurrence is cut on its own, and the
 * last one (the one a parser keeps) is cut if it is over the cap.
 */
class JsonToolLists {
  readonly drops: [from: number, to: number][] = [];
  readonly #bytes: Buffer;
  readonly #keep: number;
  readonly #maxDepth: number;
  #depth = 0;
  #i = 0;

  constructor(bytes: Buffer, maxTools: number, maxDepth: number) {
    this.#bytes = bytes;
    this.#keep = maxTools + 1;
    this.#maxDepth = maxDepth;
  }

  scan(carriers: readonly Carrier[]): this {
    // A byte-order mark, which connect's decoder drops.
    if (this.#bytes[0] === 0xef && this.#bytes[1] === 0xbb && this.#bytes[2] === 0xbf) this.#i = 3;
    this.#value({ carriers });
    this.#space();
    if (this.#i !== this.#bytes.length) throw NOT_JSON;
    return this;
  }

  #value(level: JsonLevel): void {
    this.#space();
    const c = this.#bytes[this.#i];
    if (c === 0x7b || c === 0x5b) {
      if (++this.#depth > this.#maxDepth) throw TOO_DEEP;
      if (c === 0x7b) this.#object(level);
      else this.#array(level !== undefined && "list" in level);
      this.#depth--;
    } else if (c === 0x22) this.#string();
    else this.#literal();
  }

  #object(level: JsonLevel): void {
    if (this.#empty(0x7d)) return;
    do {
      this.#space();
      const keyStart = this.#i;
      this.#string();
      const child = level === undefined || "list" in level ? undefined : this.#childLevel(level, this.#key(keyStart, this.#i));
      this.#space();
      if (this.#bytes[this.#i++] !== 0x3a) throw NOT_JSON;
      this.#value(child);
    } while (!this.#closed(0x7d));
  }

  #childLevel(level: { carriers: readonly Carrier[] } | { tools: DescField }, key: string): JsonLevel {
    if ("tools" in level) return namesOf(level.tools).includes(key) ? { list: true } : undefined;
    const carrier = level.carriers.find((c) => namesOf(c.field).includes(key));
    if (carrier === undefined) return undefined;
    return "within" in carrier ? { carriers: carrier.within } : { tools: carrier.tools };
  }

  #array(counted: boolean): void {
    if (this.#empty(0x5d)) return;
    let elements = 0;
    let keptTo = -1;
    do {
      this.#value(undefined);
      if (++elements === this.#keep) keptTo = this.#i;
    } while (!this.#closed(0x5d));
    if (counted && elements > this.#keep) this.drops.push([keptTo, this.#i - 1]);
  }

  /** Takes the opening bracket of an object or array; true (its `close` taken too) when it is empty. */
  #empty(close: number): boolean {
    this.#i++;
    this.#space();
    if (this.#bytes[this.#i] !== close) return false;
    this.#i++;
    return true;
  }

  /** Takes what follows a member or element: true at `close`, false at a comma. */
  #closed(close: number): boolean {
    this.#space();
    const next = this.#bytes[this.#i++];
    if (next === close) return true;
    if (next !== 0x2c) throw NOT_JSON;
    return false;
  }

  #string(): void {
    if (this.#bytes[this.#i] !== 0x22) throw NOT_JSON;
    for (let from = this.#i + 1; ; ) {
      const quote = this.#bytes.indexOf(0x22, from);
      if (quote < 0) throw NOT_JSON;
      let backslashes = 0;
      while (this.#bytes[quote - 1 - backslashes] === 0x5c) backslashes++;
      from = quote + 1;
      if (backslashes % 2 === 0) {
        this.#i = from;
        return;
      }
    }
  }

  /** The key whose string (quotes included) is `[start, end)`; escapes decoded as a parser would. */
  #key(start: number, end: number): string {
    const raw = this.#bytes.toString("utf8", start, end);
    return raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1);
  }

  /** A number, true, false or null: up to the next delimiter. */
  #literal(): void {
    const start = this.#i;
    for (; this.#i < this.#bytes.length; this.#i++) {
      const c = this.#bytes[this.#i];
      if (c === 0x2c || c === 0x7d || c === 0x5d || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) break;
    }
    if (this.#i === start) throw NOT_JSON;
  }

  #space(): void {
    for (;;) {
      const c = this.#bytes[this.#i];
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
      this.#i++;
    }
  }
}

/**
 * The cut of JSON messages that `carriers` describe. Every tool is a JSON object: a message
 * with no more `{` than the cap holds no list over it and is not read. One that may is scanned
 * (`JsonToolLists`: some 25 ms for 4 MiB, against 0.4–0.6 s for connect to decode 200,000
 * tools) and the elements beyond the cap are dropped from the text. A text the scan does not
 * take passes on as it came: connect refuses it (malformed). Any message nested deeper than
 * MAX_JSON_MESSAGE_DEPTH is refused first, so the scan's recursion stays shallow.
 */
const jsonCut =
  (carriers: readonly Carrier[], maxTools: number): MessageCut =>
  (bytes, start, end) => {
    const views = bytes.slice(start, end);
    let objects = 0;
    count: for (const view of views) {
      for (let i = view.indexOf(0x7b); i >= 0; i = view.indexOf(0x7b, i + 1)) if (++objects > maxTools) break count;
    }
    if (objects <= maxTools) {
      if (nestsDeeperThan(views, MAX_JSON_MESSAGE_DEPTH)) throw tooDeepMessage();
      return undefined;
    }
    // The scan that looks for the lists checks the depth on its way.
    const text = Buffer.concat(views);
    let drops: [number, number][];
    try {
      drops = new JsonToolLists(text, maxTools, MAX_JSON_MESSAGE_DEPTH).scan(carriers).drops;
    } catch (err) {
      if (err === TOO_DEEP) throw tooDeepMessage();
      // Not the JSON the scan expects: connect's decoder says what is wrong with it.
      return undefined;
    }
    if (drops.length === 0) return undefined;
    const parts: Uint8Array[] = [];
    let from = 0;
    for (const [dropFrom, dropTo] of drops.sort((x, y) => x[0] - y[0])) {
      parts.push(text.subarray(from, dropFrom));
      from = dropTo;
    }
    parts.push(text.subarray(from));
    return parts;
  };

/**
 * How deep a JSON request message may nest: a Struct's own limit (MAX_JSON_DEPTH) plus the
 * levels of the messages around it (`start.history[].parts[].tool_use.input` is 7). Deeper text
 * is refused before anything parses it: `JSON.parse` of a 4 MB text nested two million levels
 * builds two million arrays (about a second of the event loop) before the decoder's own
 * recursion limit refuses it.
 */
const MAX_JSON_MESSAGE_DEPTH = MAX_JSON_DEPTH + 16;

const tooDeepMessage = (): ConnectError =>
  toConnectError(new RozError("malformed_message", `malformed request message: JSON nested deeper than ${MAX_JSON_MESSAGE_DEPTH} levels`));

/**
 * Whether the JSON text in `views` opens more than `maxDepth` objects and arrays inside one
 * another. A text with no more openers than that is not read byte by byte; any other is
 * checked by the same text scan as REST bodies, which stops at the first level too deep. (A text with enough
 * objects to hold a tools list over the cap is checked by the list scan instead.)
 */
function nestsDeeperThan(views: readonly Uint8Array[], maxDepth: number): boolean {
  let openers = 0;
  count: for (const view of views) {
    for (const opener of [0x7b, 0x5b]) {
      for (let i = view.indexOf(opener); i >= 0; i = view.indexOf(opener, i + 1)) if (++openers > maxDepth) break count;
    }
  }
  return openers > maxDepth && tooDeepInText(views.length === 1 ? (views[0] as Uint8Array) : Buffer.concat(views), maxDepth) !== undefined;
}

/**
 * `request` (a SessionRequest's bytes) with every tools list over `maxTools` cut to
 * `maxTools + 1` entries; `request` itself when none is.
 */
export function cutToolLists(request: Uint8Array, maxTools: number): Uint8Array {
  const parts = cutParts(new ChunkedBytes([request]), 0, request.byteLength, maxTools, SESSION_REQUEST_SCREENED.shape);
  return parts === undefined ? request : Buffer.concat(parts);
}

/**
 * One envelope (flags, length, message), as the chunks it arrived in: passed on as they are,
 * unless its message has a tools list over the cap, which is then cut (views of the chunks
 * and new field headers: nothing of the large message is copied). A message too short to
 * hold an over-cap list is not read at all.
 */
function screenEnvelope(chunks: Uint8Array[], messageLength: number, maxTools: number, cuts: Cuts): Uint8Array[] {
  const flags = firstByte(chunks);
  // Flags 0: a plain message (a short one holds no list over the cap); 1: compressed, may hold
  // anything. An end-of-stream envelope is not a message.
  const cutMessage = flags === 0 ? (tooShortForOverCap(messageLength, maxTools) ? undefined : cuts.plain) : flags === 1 ? cuts.compressed : undefined;
  const cut = cutMessage?.(new ChunkedBytes(chunks), ENVELOPE_HEADER_BYTES, ENVELOPE_HEADER_BYTES + messageLength);
  if (cut === undefined) return chunks;
  const header = Buffer.alloc(ENVELOPE_HEADER_BYTES);
  writeEnvelopeHeader(
    header,
    0,
    flags === 1 ? 1 : 0,
    cut.reduce((n, p) => n + p.byteLength, 0),
  );
  const parts: Uint8Array[] = [header];
  appendAll(parts, cut);
  return parts;
}

function firstByte(chunks: readonly Uint8Array[]): number | undefined {
  for (const chunk of chunks) if (chunk.byteLength > 0) return chunk[0];
  return undefined;
}

/** How the messages of a call are cut: plain ones, and compressed ones when the screen knows their encoding. */
interface Cuts {
  plain: MessageCut;
  compressed?: MessageCut;
}

/** A message encoding of the protocols (`grpc-encoding`, `connect-content-encoding`, `content-encoding`). */
interface Compression {
  /** Throws when the data is not of this encoding, or expands beyond `maxBytes`. */
  decompress(data: Buffer, maxBytes: number): Buffer;
  compress(data: Buffer): Buffer;
}

/** The encodings connect-node accepts by default. */
const COMPRESSIONS = new Map<string, Compression>([
  ["gzip", { decompress: (data, maxBytes) => zlib.gunzipSync(data, { maxOutputLength: maxBytes }), compress: (data) => zlib.gzipSync(data) }],
  ["br", { decompress: (data, maxBytes) => zlib.brotliDecompressSync(data, { maxOutputLength: maxBytes }), compress: (data) => zlib.brotliCompressSync(data) }],
]);

/**
 * `cut` for compressed messages: a message is expanded (within `maxMessageBytes`, as connect
 * would) and, when a list in it was cut, compressed again. One that does not expand passes on
 * unchanged: connect refuses it.
 */
function compressedCut(cut: MessageCut, compression: Compression, maxMessageBytes: number): MessageCut {
  return (bytes, start, end) => {
    let plain: Buffer;
    try {
      plain = compression.decompress(Buffer.concat(bytes.slice(start, end)), maxMessageBytes);
    } catch {
      return undefined;
    }
    const parts = cut(new ChunkedBytes([plain]), 0, plain.byteLength);
    return parts === undefined ? undefined : [compression.compress(Buffer.concat(parts))];
  };
}

/**
 * The chunks of an enveloped request body with each envelope's message screened: each
 * envelope is passed on once it is complete, in the chunks it came in (split at envelope
 * boundaries); bytes after the last complete envelope are passed on at the end (connect then
 * reports the truncated message). From an envelope declaring more than `maxMessageBytes` on,
 * everything passes on at once: connect refuses it from its header, as it would unscreened.
 *
 * A hand-written iterator, not an async generator: every request of a session stream passes
 * here, and a chunk holding whole envelopes goes on in the promise that brought it.
 */
export function screenedEnvelopes(
  body: AsyncIterable<Uint8Array>,
  maxTools: number,
  maxMessageBytes: number,
  cuts: Cuts = { plain: binaryCut(SESSION_REQUEST_SCREENED.shape, maxTools) },
): AsyncIterableIterator<Uint8Array> {
  const source = body[Symbol.asyncIterator]();
  /** Screened chunks not yet handed on. */
  let ready: Uint8Array[] = [];
  let readyHead = 0;
  /** Chunks of the envelope being read. */
  const pending: Uint8Array[] = [];
  let size = 0;
  /** The message length of the envelope being read; -1 until its header is complete. */
  let length = -1;
  let passThrough = false;
  let ended = false;
  /** Returned or thrown into by the reader: nothing more is handed on, also from a read under way. */
  let closed = false;

  const feed = (chunk: Uint8Array): void => {
    if (passThrough) {
      ready.push(chunk);
      return;
    }
    pending.push(chunk);
    size += chunk.byteLength;
    for (;;) {
      if (length < 0) {
        if (size < ENVELOPE_HEADER_BYTES) return;
        const header = new ChunkedBytes(pending);
        length = ((header.at(1) << 24) >>> 0) + (header.at(2) << 16) + (header.at(3) << 8) + header.at(4);
        if (length > maxMessageBytes) {
          passThrough = true;
          appendAll(ready, pending.splice(0));
          return;
        }
      }
      const total = ENVELOPE_HEADER_BYTES + length;
      if (size < total) return;
      // Indexed, then one splice: shifting chunk by chunk is quadratic in their number.
      const envelope: Uint8Array[] = [];
      let used = 0;
      for (let need = total; need > 0; ) {
        const next = pending[used] as Uint8Array;
        if (next.byteLength <= need) {
          envelope.push(next);
          need -= next.byteLength;
          used++;
        } else {
          envelope.push(next.subarray(0, need));
          pending[used] = next.subarray(need);
          need = 0;
        }
      }
      pending.splice(0, used);
      size -= total;
      appendAll(ready, screenEnvelope(envelope, length, maxTools, cuts));
      length = -1;
    }
  };
  /** The next ready chunk, or the end; undefined while more must be read. */
  const take = (): IteratorResult<Uint8Array> | undefined => {
    if (closed) return { value: undefined, done: true };
    if (readyHead < ready.length) {
      const value = ready[readyHead++] as Uint8Array;
      if (readyHead === ready.length) {
        ready = [];
        readyHead = 0;
      }
      return { value, done: false };
    }
    return ended ? { value: undefined, done: true } : undefined;
  };
  const onRead = (read: IteratorResult<Uint8Array>): IteratorResult<Uint8Array> | Promise<IteratorResult<Uint8Array>> => {
    if (closed) return { value: undefined, done: true };
    if (read.done === true) {
      ended = true;
      appendAll(ready, pending.splice(0));
    } else feed(read.value);
    return take() ?? source.next().then(onRead);
  };
  /** The reader is done: nothing more is handed on, and the body is let go. */
  const close = async (): Promise<void> => {
    closed = true;
    ready = [];
    readyHead = 0;
    await source.return?.();
  };
  const iterator: AsyncIterableIterator<Uint8Array> = {
    next: () => {
      const taken = take();
      return taken !== undefined ? Promise.resolve(taken) : source.next().then(onRead);
    },
    return: async () => {
      await close();
      return { value: undefined, done: true };
    },
    // Connect passes a failure of its pipeline up: the source is let go, and the failure rethrown.
    throw: async (error?: unknown) => {
      await close();
      throw error;
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

/**
 * The body of a Connect unary call (one message, no envelope), screened: it is held until its
 * end, as connect would, and then passed on whole or cut. A body beyond `maxMessageBytes`
 * passes on unread: connect refuses it.
 */
async function* screenedMessage(body: AsyncIterable<Uint8Array>, maxMessageBytes: number, cutMessage: MessageCut): AsyncGenerator<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const source = body[Symbol.asyncIterator]();
  let ended = false;
  try {
    for (let read = await source.next(); read.done !== true; read = await source.next()) {
      chunks.push(read.value);
      size += read.value.byteLength;
      if (size <= maxMessageBytes) continue;
      for (const chunk of chunks) yield chunk;
      for (let rest = await source.next(); rest.done !== true; rest = await source.next()) yield rest.value;
      ended = true;
      return;
    }
    ended = true;
    const cut = cutMessage(new ChunkedBytes(chunks), 0, size);
    for (const chunk of cut ?? chunks) yield chunk;
  } finally {
    // Connect stops reading a body over its limit: the request is let go (an HTTP/1.1 connection then goes on).
    if (!ended) await source.return?.();
  }
}

interface ScreenedRequest extends AsyncIterable<Uint8Array> {
  headers: Record<string, string | string[] | undefined>;
}

/**
 * Makes the request body that connect reads from `request` the screened one, when the call at
 * `path` (the route's, without a query) can carry tools and its body is binary or JSON;
 * anything else is left as it is. Compressed messages are screened when their encoding is one
 * connect-node accepts by default (gzip, br). A Connect unary body declared over
 * `maxMessageBytes` is left to connect, which refuses it from that header.
 */
export function screenToolLists(request: ScreenedRequest, path: string, contentType: string | undefined, maxTools: number, maxMessageBytes: number): void {
  if (contentType === undefined) return;
  const json = JSON_STREAM.test(contentType) || JSON_UNARY.test(contentType);
  // Every other RPC's JSON messages are screened for their depth only.
  const call = SCREENED_OF_PATH.get(path) ?? (json && RPC_PATH.test(path) ? DEPTH_ONLY : undefined);
  if (call === undefined) return;
  const { carriers, shape } = call;
  const enveloped = json ? JSON_STREAM.test(contentType) : BINARY_STREAM.test(contentType);
  if (!json && !enveloped && !BINARY_UNARY.test(contentType)) return;
  const plain = json ? jsonCut(carriers, maxTools) : binaryCut(shape, maxTools);
  const header = (name: string): string | undefined => {
    const value = request.headers[name];
    return typeof value === "string" && value !== "identity" ? value : undefined;
  };
  const encoding = enveloped ? (header("grpc-encoding") ?? header("connect-content-encoding")) : header("content-encoding");
  const compression = encoding === undefined ? undefined : COMPRESSIONS.get(encoding);
  const compressed = compression === undefined ? undefined : compressedCut(plain, compression, maxMessageBytes);
  const body = request[Symbol.asyncIterator].bind(request);
  const source = { [Symbol.asyncIterator]: body };
  let screened: () => AsyncIterator<Uint8Array>;
  if (enveloped) screened = () => screenedEnvelopes(source, maxTools, maxMessageBytes, compressed ? { plain, compressed } : { plain });
  else {
    // An encoding the screen cannot read, or a body declared over the limit: connect's to refuse.
    if ((encoding !== undefined && compressed === undefined) || Number(request.headers["content-length"]) > maxMessageBytes) return;
    // A cut body is shorter than declared, and connect holds a unary body to its declared length.
    delete request.headers["content-length"];
    const cutMessage = compressed ?? plain;
    screened = () => screenedMessage(source, maxMessageBytes, cutMessage);
  }
  Object.defineProperty(request, Symbol.asyncIterator, { configurable: true, value: screened });
}
