import type { Http2ServerResponse } from "node:http2";

type HeaderBlock = Record<string, string | string[] | number | undefined>;

/**
 * connect-node writes `grpc-message` with `encodeURIComponent`, which also encodes `:`, `/`,
 * `,`, `;` and spaces. The gRPC protocol percent-encodes only bytes outside 0x20–0x7E and `%`,
 * and grpc-js, grpcurl and grpcio decode only that, so their users saw `%3A` and `%2F` in
 * every error message. This rewrites the value the way the protocol says.
 */
export function grpcMessageValue(connectValue: string): string {
  let text: string;
  try {
    text = decodeURIComponent(connectValue);
  } catch {
    return connectValue;
  }
  // The common case, printable ASCII without `%`, needs no encoding (and no string built a byte at a time).
  if (/^[\x20-\x24\x26-\x7e]*$/.test(text)) return text;
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function fixBlock(block: HeaderBlock | undefined): void {
  const value = block?.["grpc-message"];
  if (block && typeof value === "string") block["grpc-message"] = grpcMessageValue(value);
}

/**
 * Makes a gRPC (not gRPC-Web: its trailers travel in the body, read by clients that decode
 * URI components) response's `grpc-message` protocol-encoded, in the header block of a
 * trailers-only answer and in the trailers.
 */
export function encodeGrpcMessagesOf(res: Http2ServerResponse): void {
  const writeHead = res.writeHead.bind(res) as (status: number, headers?: HeaderBlock) => Http2ServerResponse;
  const addTrailers = res.addTrailers.bind(res);
  Object.assign(res, {
    writeHead: (status: number, headers?: HeaderBlock) => {
      fixBlock(headers);
      return writeHead(status, headers);
    },
    addTrailers: (trailers: HeaderBlock) => {
      fixBlock(trailers);
      addTrailers(trailers as Parameters<typeof addTrailers>[0]);
    },
  });
}
