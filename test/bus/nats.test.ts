// The bus conformance suite against a real nats-server (JetStream) started here, plus what
// only the NATS bus has: limits on the stream, idempotent setup, the connection's health.
// Skips with a notice when nats-server is not installed (fails instead under CI=true).
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createNatsBus, type NatsBusOptions } from "../../src/bus/index.ts";
import { RozError } from "../../src/errors/index.ts";
import { natsForTests } from "../support/nats.ts";
import { defineBusConformance } from "./conformance.ts";

const nats = await natsForTests();

/** Each bus gets its own stream (prefix), like separate deployments on one NATS. */
const freshPrefix = (): string => `t${randomBytes(4).toString("hex")}`;

if (nats === undefined) {
  describe.skip("EventBus conformance: nats (no nats-server installed)", () => {
    it("needs nats-server", () => undefined);
  });
} else {
  afterAll(() => nats.stop());
  const open = (options: Partial<NatsBusOptions> = {}) => createNatsBus({ servers: nats.url, prefix: freshPrefix(), ...options });

  defineBusConformance("nats", () => open());

  describe("nats bus specifics", () => {
    it("creates its stream with the configured limits, and opening again updates it instead of failing", async () => {
      const prefix = freshPrefix();
      const first = await open({ prefix, maxAgeMs: 3_600_000, maxBytes: 64 * 1024 * 1024 });
      const again = await open({ prefix, maxAgeMs: 7_200_000, maxBytes: 32 * 1024 * 1024 });
      const nc = await connect({ servers: nats.url });
      try {
        const info = await (await jetstreamManager(nc)).streams.info(`${prefix}_events`);
        expect(info.config.subjects).toEqual([`${prefix}.ev.>`]);
        expect(info.config.max_age).toBe(7_200_000 * 1_000_000);
        expect(info.config.max_bytes).toBe(32 * 1024 * 1024);
        expect(info.config.storage).toBe("file");
      } finally {
        await nc.close();
        await first.close();
        await again.close();
      }
    });

    it("two connections share one stream: one publishes, the other replays and follows", async () => {
      const prefix = freshPrefix();
      const a = await open({ prefix });
      const b = await open({ prefix });
      try {
        const seq = await a.publish("share.x", new Uint8Array([1]));
        const sub = b.subscribe("share.x", { from: { afterSeq: 0 } });
        await a.publish("share.x", new Uint8Array([2]));
        const got: number[] = [];
        for await (const m of sub) {
          got.push(m.data[0]!);
          if (m.seq === seq) expect(m.data[0]).toBe(1);
          if (got.length === 2) break;
        }
        expect(got).toEqual([1, 2]);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it("requests reach a responder on another connection; the handler's reason and message travel back", async () => {
      const prefix = freshPrefix();
      const a = await open({ prefix });
      const b = await open({ prefix });
      try {
        const responder = b.serve("owner.n2", async (data) => {
          if (data.length === 0) throw new RozError("turn_in_progress", "busy right now");
          return new Uint8Array([...data].reverse());
        });
        await responder.ready;
        expect([...(await a.request("owner.n2", new Uint8Array([1, 2, 3])))]).toEqual([3, 2, 1]);
        const err = (await a.request("owner.n2", new Uint8Array(0)).catch((e: unknown) => e)) as RozError;
        expect(err).toBeInstanceOf(RozError);
        expect(err.reason).toBe("turn_in_progress");
        expect(err.message).toBe("busy right now");
        responder.close();
      } finally {
        await a.close();
        await b.close();
      }
    });

    it("reports a connected health, and no server at the URL is a clear unavailable error", async () => {
      const bus = await open();
      expect(bus.health()).toEqual({ connected: true, reconnects: 0 });
      await bus.close();
      const err = (await createNatsBus({ servers: "nats://127.0.0.1:1" }).catch((e: unknown) => e)) as RozError;
      expect(err).toBeInstanceOf(RozError);
      expect(err.reason).toBe("unavailable");
      expect(err.message).toContain("nats://127.0.0.1:1");
    });

    it("an invalid prefix is refused before connecting", async () => {
      await expect(createNatsBus({ servers: nats.url, prefix: "a.b" })).rejects.toMatchObject({ reason: "config_invalid" });
    });
  });
}
