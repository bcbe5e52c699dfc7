/**
 * The JSON scanner: reads JSON text (bytes) for the tools lists of a message without parsing it.
 */
import type { DescField } from "@bufbuild/protobuf";
import { type Carrier, namesOf } from "./carriers.ts";

/** What a JSON scan looks for at a value: the carriers of an object, the `tools` of a carrier's object, or the list itself. */
type JsonLevel = { carriers: readonly Carrier[] } | { tools: DescField } | { list: true } | undefined;

/** Thrown when a text is not the JSON a scan expects: it passes on as it came, for connect to judge. */
const NOT_JSON = new Error("not the JSON the tool-list scan expects");
/** Thrown when a text nests deeper than the scan's `maxDepth`: the message is refused. */
export const TOO_DEEP = new Error("JSON nested too deep");

/**
 * A scan of JSON text (bytes) for the tools lists that `carriers` name, without parsing it:
 * the byte ranges to drop so that each list over the cap keeps its first `maxTools + 1`
 * elements. Cheaper than `JSON.parse` on many tools, and it allocates nothing per tool.
 * Duplicate keys need nothing: each occurrence is cut on its own, and the
 * last one (the one a parser keeps) is cut if it is over the cap.
 */
export class JsonToolLists {
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
