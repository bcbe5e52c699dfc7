// The framing module writes the same bytes as connect's own encoders, and the gRPC status
// trailers as the protocol encodes them.
import { Code, ConnectError } from "@connectrpc/connect";
import { encodeEnvelopes } from "@connectrpc/connect/protocol";
import { describe, expect, it } from "vitest";
import { COMPRESSED_FLAG, envelopeHeader, envelopeLength, envelopes, grpcPercentEncode, grpcStatusTrailers } from "../../src/rpc/framing.ts";

describe("envelopes", () => {
  it("frames messages as connect's encodeEnvelopes does", () => {
    const messages = [new Uint8Array([1, 2, 3]), new Uint8Array(0), new Uint8Array(300).fill(9)];
    expect(Buffer.from(envelopes(messages))).toEqual(Buffer.from(encodeEnvelopes(...messages.map((data) => ({ flags: 0, data })))));
  });

  it("reads back the length a header declares, also beyond 2^31", () => {
    for (const length of [0, 5, 70_000, 2 ** 31 + 7]) {
      const header = envelopeHeader(COMPRESSED_FLAG, length);
      expect(header[0]).toBe(1);
      expect(envelopeLength((i) => header[i]!)).toBe(length);
    }
  });
});

describe("gRPC status trailers", () => {
  it("carries the code, and the message percent-encoded only where the protocol says", () => {
    const trailers = grpcStatusTrailers(new ConnectError("key k: over 2/2 streams; 100% used — é", Code.ResourceExhausted));
    expect(trailers["grpc-status"]).toBe(String(Code.ResourceExhausted));
    expect(trailers["grpc-message"]).toBe("key k: over 2/2 streams; 100%25 used %E2%80%94 %C3%A9");
  });

  it("is OK without an error", () => {
    expect(grpcStatusTrailers(undefined)).toEqual({ "grpc-status": "0" });
  });

  it("leaves printable ASCII without % as it is", () => {
    expect(grpcPercentEncode("plain: a/b, c;")).toBe("plain: a/b, c;");
  });
});
