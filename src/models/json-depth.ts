/** How deeply JSON from clients may nest (objects and arrays); deeper values are refused. */
export const MAX_JSON_DEPTH = 64;

/**
 * The path (keys and indexes from the root) of the first object or array nested deeper than
 * `maxDepth` in `value`, or undefined when it nests no deeper. Iterative, so that the
 * check itself cannot overflow the stack on the values it exists to refuse.
 */
export function tooDeepAt(value: unknown, maxDepth = MAX_JSON_DEPTH): string[] | undefined {
  const stack: { node: unknown; depth: number; path: string[] }[] = [{ node: value, depth: 1, path: [] }];
  while (stack.length > 0) {
    const { node, depth, path } = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    if (depth > maxDepth) return path;
    for (const [key, child] of Object.entries(node)) {
      if (typeof child === "object" && child !== null) stack.push({ node: child, depth: depth + 1, path: [...path, key] });
    }
  }
  return undefined;
}

const utf8 = new TextDecoder();

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

/**
 * `tooDeepAt` for JSON text, before it is parsed: the first element of the path to the first
 * object or array nested deeper than `maxDepth` (a top-level key, or index of a top-level
 * array; "" for the root itself), or undefined when it nests no deeper or is not JSON (the
 * parser then says why). One pass that stops there, so that a body nested 100,000 levels
 * deep costs 64 levels of scanning instead of 100,000 parsed objects. The text may be its
 * UTF-8 bytes, undecoded: a structural character is never part of a multi-byte one.
 */
export function tooDeepInText(text: string | Uint8Array, maxDepth = MAX_JSON_DEPTH): string | undefined {
  const codeAt = typeof text === "string" ? (i: number) => text.charCodeAt(i) : (i: number) => text[i] as number;
  const between =
    typeof text === "string" ? (from: number, to: number) => text.slice(from, to) : (from: number, to: number) => utf8.decode(text.subarray(from, to));
  let depth = 0;
  let rootIsArray = false;
  let index = 0;
  let key = "";
  let stringStart = -1;
  let lastString = "";
  for (let i = 0; i < text.length; i++) {
    const c = codeAt(i);
    if (stringStart >= 0) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) {
        if (depth === 1) lastString = between(stringStart, i);
        stringStart = -1;
      }
      continue;
    }
    if (c === QUOTE) stringStart = i + 1;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (depth === 0) rootIsArray = c === OPEN_ARRAY;
      if (++depth > maxDepth) return depth === 1 ? "" : rootIsArray ? String(index) : key;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
    else if (depth === 1 && c === COLON) key = lastString;
    else if (depth === 1 && c === COMMA) index++;
  }
  return undefined;
}
