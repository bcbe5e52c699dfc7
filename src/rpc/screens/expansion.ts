/**
 * Compressed messages: expanded (gzip, br, the encodings connect-node accepts by default)
 * before a scanner reads them, and compressed again only when cut.
 */
import * as zlib from "node:zlib";
import { ChunkedBytes, type MessageCut } from "./chunked-bytes.ts";

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
 * `cut` for messages compressed with `encoding`; undefined for an encoding the screen cannot
 * read. A message is expanded (within `maxMessageBytes`, as connect would) and, when a list in
 * it was cut, compressed again. One that does not expand passes on unchanged: connect refuses it.
 */
export function compressedCut(cut: MessageCut, encoding: string, maxMessageBytes: number): MessageCut | undefined {
  const compression = COMPRESSIONS.get(encoding);
  if (compression === undefined) return undefined;
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
