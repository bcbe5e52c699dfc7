/**
 * The one place that writes gRPC, gRPC-Web and Connect streaming frames beside connect-es:
 * the envelope (a flags byte, the message length as a big-endian u32, the message) and the
 * gRPC status trailers. The flag values and the status fields come from connect's protocol
 * modules; the envelope bytes are written here into a pooled `Buffer`, because connect's
 * `encodeEnvelope(s)` allocates a fresh zeroed array per call and the direct write path
 * frames every streamed delta.
 */
import type { ConnectError } from "@connectrpc/connect";
import { compressedFlag } from "@connectrpc/connect/protocol";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";

/** The length of an envelope header: the flags byte and the u32 message length. */
export const ENVELOPE_HEADER_BYTES = 5;

/** The flag of an envelope whose message is compressed with the call's encoding. */
export const COMPRESSED_FLAG: number = compressedFlag;

function writeEnvelopeHeader(out: Buffer, at: number, flags: number, length: number): void {
  out[at] = flags;
  out.writeUInt32BE(length, at + 1);
}

/** The header of an envelope with `flags` around a message of `length` bytes. */
export function envelopeHeader(flags: number, length: number): Uint8Array {
  const header = Buffer.allocUnsafe(ENVELOPE_HEADER_BYTES);
  writeEnvelopeHeader(header, 0, flags, length);
  return header;
}

/**
 * The message length an envelope header declares, its bytes read through `byteAt` (the header
 * may arrive split over chunks).
 */
export function envelopeLength(byteAt: (index: number) => number): number {
  return ((byteAt(1) << 24) >>> 0) + (byteAt(2) << 16) + (byteAt(3) << 8) + byteAt(4);
}

/**
 * The messages as one chunk of envelopes with flags 0: not compressed, as connect sends a
 * message below its `compressMinBytes` whatever encoding was negotiated.
 */
export function envelopes(messages: readonly Uint8Array[]): Uint8Array {
  let size = 0;
  for (const m of messages) size += ENVELOPE_HEADER_BYTES + m.length;
  const chunk = Buffer.allocUnsafe(size);
  let at = 0;
  for (const m of messages) {
    writeEnvelopeHeader(chunk, at, 0, m.length);
    chunk.set(m, at + ENVELOPE_HEADER_BYTES);
    at += ENVELOPE_HEADER_BYTES + m.length;
  }
  return chunk;
}

/**
 * gRPC's percent-encoding of `grpc-message`: UTF-8, with the bytes outside 0x20–0x7E and `%`
 * escaped, which is all that grpc-js, grpcurl and grpcio decode.
 */
export function grpcPercentEncode(text: string): string {
  // The common case, printable ASCII without `%`, needs no encoding (and no string built a byte at a time).
  if (/^[\x20-\x24\x26-\x7e]*$/.test(text)) return text;
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/**
 * connect-node writes `grpc-message` with `encodeURIComponent`, which also encodes `:`, `/`,
 * `,`, `;` and spaces: gRPC clients then show `%3A` and `%2F` in every error message. This is
 * the value the way the gRPC protocol encodes it.
 */
export function grpcMessageValue(connectValue: string): string {
  let text: string;
  try {
    text = decodeURIComponent(connectValue);
  } catch {
    return connectValue;
  }
  return grpcPercentEncode(text);
}

/** The gRPC status trailers of a call that ends with `error` (none: OK), as connect sets them but for `grpc-message`'s encoding. */
export function grpcStatusTrailers(error: ConnectError | undefined): Record<string, string> {
  const trailers: Record<string, string> = {};
  setTrailerStatus(new Headers(), error).forEach((value, name) => {
    trailers[name] = name === "grpc-message" ? grpcMessageValue(value) : value;
  });
  return trailers;
}
