/**
 * Screens the requests that can carry tools before connect decodes them (see carriers.ts for
 * which). A start, user_message or register_tools carrying more tools than one request may is
 * cut to its first `maxTools + 1` tools: the session then refuses it as over the cap, as it
 * would the whole message, and decoding stays bounded (connect's decoding costs the event loop
 * time for every tool, and a message at the read limit can hold hundreds of thousands).
 *
 * The binary scan reads field tags and lengths only (binary-cut.ts); a JSON message is scanned
 * once when it has enough objects to hold an over-cap list (json-cut.ts). A compressed message
 * is expanded first (expansion.ts). What follows bytes that do not parse is kept as it is: the
 * decoder fails there, after the (cut) lists before it.
 */
import { binaryCut } from "./binary-cut.ts";
import { screenedOf } from "./carriers.ts";
import { screenedEnvelopes } from "./envelopes.ts";
import { compressedCut } from "./expansion.ts";
import { jsonCut } from "./json-cut.ts";
import { screenedMessage } from "./unary-message.ts";

/** Enveloped messages (gRPC, gRPC-Web, Connect streaming), binary or JSON. */
const BINARY_STREAM = /^application\/(grpc(-web)?(\+proto)?|connect\+proto)(;|$)/i;
const JSON_STREAM = /^application\/(grpc(-web)?|connect)\+json(;|$)/i;
/** A Connect unary call: the body is the one message. */
const BINARY_UNARY = /^application\/proto(;|$)/i;
const JSON_UNARY = /^application\/json(;|$)/i;

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
  const call = screenedOf(path, json);
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
  const compressed = encoding === undefined ? undefined : compressedCut(plain, encoding, maxMessageBytes);
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
