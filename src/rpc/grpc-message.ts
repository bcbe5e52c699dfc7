import type { Http2ServerResponse } from "node:http2";
import { grpcMessageValue } from "./framing.ts";

type HeaderBlock = Record<string, string | string[] | number | undefined>;

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
