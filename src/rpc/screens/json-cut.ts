import type { ConnectError } from "@connectrpc/connect";
import { RozError } from "../../errors/index.ts";
import { MAX_JSON_DEPTH, tooDeepInText } from "../../models/index.ts";
import { toConnectError } from "../connect-errors.ts";
import type { Carrier } from "./carriers.ts";
import type { MessageCut } from "./chunked-bytes.ts";
import { JsonToolLists, TOO_DEEP } from "./json-tool-lists.ts";

/**
 * The cut of JSON messages that `carriers` describe. Every tool is a JSON object: a message
 * with no more `{` than the cap holds no list over it and is not read. One that may is scanned
 * (`JsonToolLists`, far cheaper than connect decoding every tool) and the elements beyond the
 * cap are dropped from the text. A text the scan does not take passes on as it came: connect
 * refuses it (malformed). Any message nested deeper than MAX_JSON_MESSAGE_DEPTH is refused
 * first, so the scan's recursion stays shallow.
 */
export const jsonCut =
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
 * is refused before anything parses it: `JSON.parse` of a text nested millions of levels
 * builds millions of arrays, holding the event loop, before the decoder's own recursion limit
 * refuses it.
 */
const MAX_JSON_MESSAGE_DEPTH = MAX_JSON_DEPTH + 16;

const tooDeepMessage = (): ConnectError =>
  toConnectError(new RozError("malformed_message", `malformed request message: JSON nested deeper than ${MAX_JSON_MESSAGE_DEPTH} levels`));

/**
 * Whether the JSON text in `views` opens more than `maxDepth` objects and arrays inside one
 * another. A text with no more openers than that is not read byte by byte; any other is
 * checked by the same text scan as REST bodies, which stops at the first level too deep. (A
 * text with enough objects to hold a tools list over the cap is checked by the list scan
 * instead.)
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
