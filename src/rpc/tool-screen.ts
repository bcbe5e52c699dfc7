/**
 * Screens the binary `SessionRequest`s of a StreamSession before connect decodes them. A
 * start, user_message or register_tools carrying more tools than one request may is cut to
 * its first `maxTools + 1` tools: the session then refuses it as over the cap, as it would
 * the whole message, and decoding stays bounded. Decoding costs about 2 µs a tool, and a
 * 4 MiB message holds some 350,000 minimal tools: most of a second of the event loop.
 *
 * The scan reads field tags and lengths only (no message is decoded). Compressed messages,
 * JSON codecs and messages that do not parse pass unchanged: connect decodes (or refuses)
 * them as before, within the message size limit.
 */

import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

const ENVELOPE_HEADER_BYTES = 5;

/** SessionRequest fields whose message carries tools → the `tools` field number in it. */
const TOOLS_FIELD_OF = new Map([
  [1, 4], // start: StartSession.tools
  [2, 5], // user_message: UserMessage.tools
  [9, 2], // register_tools: RegisterTools.tools
]);

/** Binary content types of the three protocols (gRPC, gRPC-Web, Connect streaming). */
const BINARY_STREAM = /^application\/(grpc(-web)?(\+proto)?|connect\+proto)(;|$)/i;

/** Whether a request of `contentType` carries enveloped binary messages the screen reads. */
export const isScreenedContentType = (contentType: string | undefined): boolean => contentType !== undefined && BINARY_STREAM.test(contentType);

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
 * number, wire type, start (its tag), value start and end; false when it does not parse.
 */
function walkFields(
  bytes: ChunkedBytes,
  start: number,
  end: number,
  visit: (number: number, wireType: number, fieldStart: number, valueStart: number, end: number) => void,
): boolean {
  for (let pos = start; pos < end; ) {
    const key = readVarint(bytes, pos, end);
    if (key < 0) return false;
    const next = endOfField(bytes, key, end);
    if (next < 0) return false;
    // A length-delimited value starts after its length, where `cursor` is now.
    visit(Math.floor(key / 8), key % 8, pos, key % 8 === WireType.LengthDelimited ? cursor : next, next);
    pos = next;
  }
  return true;
}

/** How many length-delimited `field` entries the message in `bytes[start, end)` has; -1 when it does not parse. */
function countEntries(bytes: ChunkedBytes, start: number, end: number, field: number): number {
  let count = 0;
  const parsed = walkFields(bytes, start, end, (number, wireType) => {
    if (number === field && wireType === WireType.LengthDelimited) count++;
  });
  return parsed ? count : -1;
}

interface ToolsCarrier {
  number: number;
  start: number;
  valueStart: number;
  end: number;
  toolsField: number;
}

/** A tool takes at least two bytes (tag and length): a message this short holds no list over the cap. */
const tooShortForOverCap = (messageLength: number, maxTools: number): boolean => messageLength < 2 * (maxTools + 1);

/**
 * The occurrences of the tool-carrying fields of the SessionRequest in `bytes[start, end)`
 * whose field number holds more than `maxTools` tools in all (a decoder merges the
 * occurrences of one field, lists included); undefined when it does not parse.
 */
function overCapLists(bytes: ChunkedBytes, start: number, end: number, maxTools: number): ToolsCarrier[] | undefined {
  if (tooShortForOverCap(end - start, maxTools)) return [];
  const carriers: ToolsCarrier[] = [];
  const toolsOf = new Map<number, number>();
  let inner = true;
  const parsed = walkFields(bytes, start, end, (number, wireType, fieldStart, valueStart, valueEnd) => {
    const toolsField = TOOLS_FIELD_OF.get(number);
    if (toolsField === undefined || wireType !== WireType.LengthDelimited) return;
    const tools = countEntries(bytes, valueStart, valueEnd, toolsField);
    if (tools < 0) inner = false;
    carriers.push({ number, start: fieldStart, valueStart, end: valueEnd, toolsField });
    toolsOf.set(number, (toolsOf.get(number) ?? 0) + tools);
  });
  if (!parsed || !inner) return undefined;
  return carriers.filter((c) => toolsOf.get(c.number)! > maxTools);
}

/** Byte ranges of `bytes` to keep, adjacent ones merged. */
class Ranges {
  readonly #bytes: ChunkedBytes;
  readonly #starts: number[] = [];
  readonly #ends: number[] = [];

  constructor(bytes: ChunkedBytes) {
    this.#bytes = bytes;
  }

  add(start: number, end: number): void {
    const last = this.#ends.length - 1;
    if (last >= 0 && this.#ends[last] === start) this.#ends[last] = end;
    else {
      this.#starts.push(start);
      this.#ends.push(end);
    }
  }

  parts(): Uint8Array[] {
    return this.#starts.flatMap((start, i) => this.#bytes.slice(start, this.#ends[i]!));
  }
}

/**
 * Appends `items` one by one: a client decides how many chunks a message arrives in, and a
 * spread (`push(...items)`) throws beyond some 100,000 of them.
 */
function appendAll<T>(target: T[], items: readonly T[]): void {
  for (const item of items) target.push(item);
}

/** The message in `bytes[start, end)` without the `toolsField` entries after the first `keep`, and how many it kept. */
function withToolsCut(bytes: ChunkedBytes, start: number, end: number, toolsField: number, keep: number): { parts: Uint8Array[]; kept: number } {
  const ranges = new Ranges(bytes);
  let tools = 0;
  walkFields(bytes, start, end, (number, wireType, fieldStart, _valueStart, fieldEnd) => {
    if (number === toolsField && wireType === WireType.LengthDelimited && tools++ >= keep) return;
    ranges.add(fieldStart, fieldEnd);
  });
  return { parts: ranges.parts(), kept: Math.min(tools, keep) };
}

/**
 * The SessionRequest in `bytes[start, end)` with every tools list longer than `maxTools` cut
 * to `maxTools + 1` entries, as parts (views of `bytes` and new field headers); undefined
 * when no list is over the cap, or when the message does not parse.
 */
function cutParts(bytes: ChunkedBytes, start: number, end: number, maxTools: number): Uint8Array[] | undefined {
  const overCap = overCapLists(bytes, start, end, maxTools);
  if (overCap === undefined || overCap.length === 0) return undefined;
  const parts: Uint8Array[] = [];
  let keptTo = start;
  /** Per field number, how many more tools its occurrences keep (they merge into one list). */
  const left = new Map<number, number>();
  for (const field of overCap) {
    // Everything before the field is kept; its tag and length are written anew.
    const cut = withToolsCut(bytes, field.valueStart, field.end, field.toolsField, left.get(field.number) ?? maxTools + 1);
    left.set(field.number, (left.get(field.number) ?? maxTools + 1) - cut.kept);
    const length = cut.parts.reduce((n, p) => n + p.byteLength, 0);
    appendAll(parts, bytes.slice(keptTo, field.start));
    parts.push(new BinaryWriter().tag(field.number, WireType.LengthDelimited).uint32(length).finish());
    appendAll(parts, cut.parts);
    keptTo = field.end;
  }
  appendAll(parts, bytes.slice(keptTo, end));
  return parts;
}

/**
 * `request` (a SessionRequest's bytes) with every tools list longer than `maxTools` cut to
 * `maxTools + 1` entries; `request` itself when none is, or when it does not parse.
 */
export function cutToolLists(request: Uint8Array, maxTools: number): Uint8Array {
  const parts = cutParts(new ChunkedBytes([request]), 0, request.byteLength, maxTools);
  return parts === undefined ? request : Buffer.concat(parts);
}

/**
 * One envelope (flags, length, message), as the chunks it arrived in: passed on as they are,
 * unless its message has a tools list over the cap, which is then cut (views of the chunks
 * and new field headers: nothing of the large message is copied). A message too short to
 * hold an over-cap list is not read at all.
 */
function screenEnvelope(chunks: Uint8Array[], messageLength: number, maxTools: number): Uint8Array[] {
  if (tooShortForOverCap(messageLength, maxTools)) return chunks;
  const bytes = new ChunkedBytes(chunks);
  // Flags 0: neither compressed nor an end-of-stream envelope.
  const cut = bytes.at(0) === 0 ? cutParts(bytes, ENVELOPE_HEADER_BYTES, bytes.length, maxTools) : undefined;
  if (cut === undefined) return chunks;
  const header = Buffer.alloc(ENVELOPE_HEADER_BYTES);
  header.writeUInt32BE(
    cut.reduce((n, p) => n + p.byteLength, 0),
    1,
  );
  const parts: Uint8Array[] = [header];
  appendAll(parts, cut);
  return parts;
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
export function screenedEnvelopes(body: AsyncIterable<Uint8Array>, maxTools: number, maxMessageBytes: number): AsyncIterableIterator<Uint8Array> {
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
      appendAll(ready, screenEnvelope(envelope, length, maxTools));
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

/** Makes the request body that connect reads from `request` the screened one. */
export function screenToolLists(request: AsyncIterable<Uint8Array>, maxTools: number, maxMessageBytes: number): void {
  const body = request[Symbol.asyncIterator].bind(request);
  Object.defineProperty(request, Symbol.asyncIterator, {
    configurable: true,
    value: () => screenedEnvelopes({ [Symbol.asyncIterator]: body }, maxTools, maxMessageBytes)[Symbol.asyncIterator](),
  });
}
