// Keepalive messages on StreamSession for the whole life of the stream (§1).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGrpcJsClient, req, type RozGrpcJsClient, type WireResponse } from "../support/grpc-js-client.ts";
import { startServer, type TestServer } from "../support/server.ts";

let server: TestServer;
let client: RozGrpcJsClient;
beforeAll(async () => {
  server = await startServer({ ROZ_KEEPALIVE_INTERVAL_MS: "200" });
  client = createGrpcJsClient(server.url);
});
afterAll(async () => {
  client?.close();
  await server?.close();
});

type Keepalive = { tokens_used?: number; tokens_max?: number };
const keepaliveOf = (r: WireResponse): Keepalive => {
  expect(r.response).toBe("keepalive");
  return r["keepalive"] as Keepalive;
};
const isKeepalive = (r: WireResponse): boolean => r.response === "keepalive";

describe("keepalive", () => {
  it("arrives before start with the counts of an empty session (0 of the default window)", async () => {
    const call = client.openSession();
    try {
      const first = await call.next(5_000);
      expect(first.seq).toBe("0");
      const body = keepaliveOf(first);
      expect(body.tokens_used).toBe(0);
      expect(body.tokens_max).toBe(200_000);
      // ... and keeps arriving.
      expect(keepaliveOf(await call.next(5_000)).tokens_max).toBe(200_000);
    } finally {
      call.cancel();
    }
  });

  it("arrives on a started session with tokens_max, numbered after session_started", async () => {
    const call = client.openSession();
    try {
      call.send(req.start({ max_context_tokens: 50_000 }));
      const started = await call.responses.nextMatching((r) => !isKeepalive(r), 5_000);
      expect(started.response).toBe("session_started");
      const seqStarted = Number(started.seq);
      const seqs: number[] = [];
      for (let i = 0; i < 2; i++) {
        const k = await call.responses.nextMatching(isKeepalive, 5_000);
        const body = keepaliveOf(k);
        expect(body.tokens_max).toBe(50_000);
        expect(body.tokens_used).toEqual(expect.any(Number));
        expect(body.tokens_used).toBeLessThanOrEqual(50_000);
        seqs.push(Number(k.seq));
      }
      expect(seqs[0]).toBeGreaterThan(seqStarted);
      expect(seqs[1]).toBeGreaterThan(seqs[0]!);
    } finally {
      call.cancel();
    }
  });
});
