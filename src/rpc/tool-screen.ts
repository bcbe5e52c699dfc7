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

const ENVELOPE_HEADER_BYTES = 5;
const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

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

/** Where the last `readVarint` stopped (module state: the scan allocates nothing per field). */
let cursor = 0;

/** The varint at `pos` (its end in `cursor`); -1 past `end` or beyond 2^53. */
function readVarint(bytes: Uint8Array, pos: number, end: number): number {
  let value = 0;
  let scale = 1;
  for (let i = pos; i < end && i < pos + 8; i++) {
    const byte = bytes[i]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      cursor = i + 1;
      return value;
    }
    scale *= 128;
  }
  return -1;
}

/**
 * Walks the fields of the message in `bytes[start, end)`, calling `visit` with each one's
 * number, wire type, start (its tag), value start and end; false when it does not parse.
 */
function walkFields(
  bytes: Uint8Array,
  start: number,
  end: number,
  visit: (number: number, wireType: number, fieldStart: number, valueStart: number, fieldEnd: number) => void,
): boolean {
  let pos = start;
  while (pos < end) {
    const key = readVarint(bytes, pos, end);
    if (key < 0) return false;
    const wireType = key % 8;
    let valueStart = cursor;
    let next: number;
    if (wireType === WIRE_VARINT) {
      if (readVarint(bytes, valueStart, end) < 0) return false;
      next = cursor;
    } else if (wireType === WIRE_I64) next = valueStart + 8;
    else if (wireType === WIRE_I32) next = valueStart + 4;
    else if (wireType === WIRE_LEN) {
      const length = readVarint(bytes, valueStart, end);
      if (length < 0) return false;
      valueStart = cursor;
      next = valueStart + length;
    } else return false; // groups: not in this schema
    if (next > end) return false;
    visit(Math.floor(key / 8), wireType, pos, valueStart, next);
    pos = next;
  }
  return true;
}

function varint(value: number): number[] {
  const out: number[] = [];
  while (value >= 0x80) {
    out.push((value % 128) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

/** Byte ranges of `bytes` to copy, adjacent ones merged. */
class Ranges {
  readonly #bytes: Uint8Array;
  readonly #starts: number[] = [];
  readonly #ends: number[] = [];

  constructor(bytes: Uint8Array) {
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
    return this.#starts.map((start, i) => this.#bytes.subarray(start, this.#ends[i]));
  }
}

/** The message in `bytes[start, end)` without the `toolsField` entries after the first `keep`. */
function withToolsCut(bytes: Uint8Array, start: number, end: number, toolsField: number, keep: number): Uint8Array[] {
  const kept = new Ranges(bytes);
  let tools = 0;
  walkFields(bytes, start, end, (number, wireType, fieldStart, _valueStart, fieldEnd) => {
    if (number === toolsField && wireType === WIRE_LEN && tools++ >= keep) return;
    kept.add(fieldStart, fieldEnd);
  });
  return kept.parts();
}

/**
 * `request` (a SessionRequest's bytes) with every tools list longer than `maxTools` cut to
 * `maxTools + 1` entries; `request` itself when none is, or when it does not parse.
 */
export function cutToolLists(request: Uint8Array, maxTools: number): Uint8Array {
  // A tool takes at least two bytes: no message this short can hold too many.
  if (request.byteLength < 2 * (maxTools + 1)) return request;
  const overCap: { number: number; start: number; valueStart: number; end: number; toolsField: number }[] = [];
  const parsed = walkFields(request, 0, request.byteLength, (number, wireType, start, valueStart, end) => {
    const toolsField = TOOLS_FIELD_OF.get(number);
    if (toolsField === undefined || wireType !== WIRE_LEN) return;
    let tools = 0;
    const inner = walkFields(request, valueStart, end, (n, w) => {
      if (n === toolsField && w === WIRE_LEN) tools++;
    });
    if (inner && tools > maxTools) overCap.push({ number, start, valueStart, end, toolsField });
  });
  if (!parsed || overCap.length === 0) return request;
  const parts: Uint8Array[] = [];
  let copiedTo = 0;
  for (const field of overCap) {
    // Everything before the field is copied; its tag and length are written anew.
    const inner = withToolsCut(request, field.valueStart, field.end, field.toolsField, maxTools + 1);
    const length = inner.reduce((n, p) => n + p.byteLength, 0);
    parts.push(request.subarray(copiedTo, field.start), Uint8Array.from([...varint(field.number * 8 + WIRE_LEN), ...varint(length)]), ...inner);
    copiedTo = field.end;
  }
  parts.push(request.subarray(copiedTo));
  return Buffer.concat(parts);
}

/** One envelope (flags, length, message) with its message screened. */
function screenEnvelope(envelope: Uint8Array, maxTools: number): Uint8Array {
  const flags = envelope[0]!;
  if (flags !== 0) return envelope; // compressed, or an end-of-stream envelope
  const message = envelope.subarray(ENVELOPE_HEADER_BYTES);
  const screened = cutToolLists(message, maxTools);
  if (screened === message) return envelope;
  const header = Buffer.alloc(ENVELOPE_HEADER_BYTES);
  header.writeUInt32BE(screened.byteLength, 1);
  return Buffer.concat([header, screened]);
}

/**
 * The chunks of an enveloped request body, re-cut as one chunk per complete envelope with
 * each message screened; bytes after the last complete envelope are passed on at the end
 * (connect then reports the truncated message).
 */
export async function* screenedEnvelopes(body: AsyncIterable<Uint8Array>, maxTools: number): AsyncGenerator<Uint8Array> {
  let pending: Uint8Array[] = [];
  let size = 0;
  let need = ENVELOPE_HEADER_BYTES;
  let haveHeader = false;
  for await (const chunk of body) {
    pending.push(chunk);
    size += chunk.byteLength;
    while (size >= need) {
      const all = pending.length === 1 ? pending[0]! : Buffer.concat(pending, size);
      pending = [all];
      if (!haveHeader) {
        haveHeader = true;
        need = ENVELOPE_HEADER_BYTES + Buffer.from(all.buffer, all.byteOffset, all.byteLength).readUInt32BE(1);
        continue;
      }
      yield screenEnvelope(all.subarray(0, need), maxTools);
      const rest = all.subarray(need);
      pending = rest.byteLength > 0 ? [rest] : [];
      size = rest.byteLength;
      need = ENVELOPE_HEADER_BYTES;
      haveHeader = false;
    }
  }
  if (size > 0) yield pending.length === 1 ? pending[0]! : Buffer.concat(pending, size);
}

/** Makes the request body that connect reads from `request` the screened one. */
export function screenToolLists(request: AsyncIterable<Uint8Array>, maxTools: number): void {
  const body = request[Symbol.asyncIterator].bind(request);
  Object.defineProperty(request, Symbol.asyncIterator, {
    configurable: true,
    value: () => screenedEnvelopes({ [Symbol.asyncIterator]: body }, maxTools)[Symbol.asyncIterator](),
  });
}
