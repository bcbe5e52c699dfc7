import { describe, expect, it } from "vitest";
import { type ClusterRequest, decodeLine, decodeReply, decodeRequest, encodeLine, encodeReply, encodeRequest } from "../../src/cluster/codec.ts";
import { RozError } from "../../src/errors/index.ts";

const bytes = (...values: number[]): Uint8Array => new Uint8Array(values);

describe("cluster codec", () => {
  it("round-trips every request kind, bytes fields as they are", () => {
    const principal = { tenantId: "t1", scopes: ["sessions", "admin"], keyId: "k1" };
    const requests: ClusterRequest[] = [
      { kind: "end-session", tenantId: "t1", sessionId: "s1", reason: "deleted" },
      { kind: "deliver", principal, sessionId: "s1", request: bytes(1, 2, 3) },
      { kind: "relay-open", relayId: "r1", principal: { tenantId: "t2", scopes: [] }, sessionId: "s1", afterSeq: 42, format: "envelope" },
      { kind: "relay-request", relayId: "r1", request: bytes(0, 255, 10) },
      { kind: "relay-closed", relayId: "r1" },
      { kind: "relay-broken", relayId: "r1" },
      { kind: "relay-fail", relayId: "r1", reason: "unauthenticated", message: "key revoked" },
      { kind: "relay-keep", relayIds: ["r1", "r2"] },
    ];
    for (const request of requests) expect(decodeRequest(encodeRequest(request))).toEqual(request);
  });

  it("round-trips replies and line messages", () => {
    expect(decodeReply("relay-keep", encodeReply("relay-keep", { sent: [3, null, 0] }))).toEqual({ sent: [3, null, 0] });
    expect(decodeReply("deliver", encodeReply("deliver", { lastSeq: 7 }))).toEqual({ lastSeq: 7 });
    expect(decodeReply("relay-open", encodeReply("relay-open", {}))).toEqual({});
    const response = decodeLine(encodeLine({ kind: "response", n: 1, seq: 9, data: bytes(8, 150, 1) }));
    expect(response).toEqual({ kind: "response", n: 1, seq: 9, data: bytes(8, 150, 1) });
    expect(decodeLine(encodeLine({ kind: "response", n: 2, seq: 0, data: bytes() }))).toEqual({ kind: "response", n: 2, seq: 0, data: bytes() });
    expect(decodeLine(encodeLine({ kind: "end", n: 3 }))).toEqual({ kind: "end", n: 3 });
    expect(decodeLine(encodeLine({ kind: "error", n: 4, reason: "not_found", message: "gone" }))).toEqual({
      kind: "error",
      n: 4,
      reason: "not_found",
      message: "gone",
    });
  });

  it("reads an unknown error reason as unavailable", () => {
    const frame = encodeLine({ kind: "error", n: 1, reason: "not_found", message: "" });
    const tampered = new TextEncoder().encode(new TextDecoder().decode(frame).replace("not_found", "no_such!!"));
    expect(decodeLine(tampered)).toMatchObject({ kind: "error", reason: "unavailable" });
  });

  it("refuses unknown kinds, missing or mistyped fields and broken frames with invalid_argument", () => {
    const frame = (json: unknown, tail = bytes()): Uint8Array => {
      const head = new TextEncoder().encode(JSON.stringify(json));
      const out = new Uint8Array(4 + head.length + tail.length);
      new DataView(out.buffer).setUint32(0, head.length);
      out.set(head, 4);
      out.set(tail, 4 + head.length);
      return out;
    };
    const refused = (f: () => unknown): void => {
      expect(f).toThrow(RozError);
      try {
        f();
      } catch (err) {
        expect((err as RozError).reason).toBe("invalid_argument");
      }
    };
    refused(() => decodeRequest(frame({ kind: "explode" })));
    refused(() => decodeRequest(frame({ kind: "end-session", tenantId: "t", sessionId: "s" })));
    refused(() => decodeRequest(frame({ kind: "relay-open", relayId: "r", principal: { scopes: [] }, sessionId: "s", afterSeq: 0, format: "flat" })));
    refused(() => decodeRequest(frame({ kind: "relay-keep", relayIds: ["a", 1] })));
    refused(() =>
      decodeRequest(frame({ kind: "relay-open", relayId: "r", principal: { tenantId: "t", scopes: [] }, sessionId: "s", afterSeq: "1", format: "flat" })),
    );
    refused(() => decodeRequest(bytes(0, 0)));
    refused(() => decodeRequest(bytes(0, 0, 0, 9, 123)));
    refused(() => decodeLine(frame([1, 2])));
    refused(() => decodeReply("deliver", frame({})));
  });
});
