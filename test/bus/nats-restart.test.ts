// NATS restarted under load: the node's bus reconnects, /readyz says "not ready" meanwhile and
// /metrics shows the connection state and the reconnect, and no acknowledged event is lost:
// a subscription opened before the restart receives every event, in order, once NATS is back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BusMessage } from "../../src/bus/index.ts";
import { natsForTests, type TestNats } from "../support/nats.ts";
import { metric, readyz, startServer, type TestServer } from "../support/server.ts";

const nats = await natsForTests();

/** Polls `check` until it returns true (rejects after `timeoutMs`, naming `what`). */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

if (nats === undefined) {
  describe.skip("NATS restart under load (no nats-server installed)", () => {
    it("needs nats-server", () => undefined);
  });
} else {
  describe("NATS restart under load", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer({ NATS_URL: nats.url, ROZ_NATS_PREFIX: "restart" });
    });
    afterAll(async () => {
      await server?.close();
      await (nats as TestNats).stop();
    });

    it("reconnects, is not ready meanwhile, and loses nothing that was acknowledged", { timeout: 120_000 }, async () => {
      const { url, app } = server;
      expect((await (await fetch(`${url}/v1/version`)).json()).bus).toBe("nats");
      expect(await readyz(url)).toMatchObject({ status: 200 });
      expect((await readyz(url)).checks).toContainEqual({ name: "bus", ok: true });
      expect(await metric(url, /^roz_bus_connected\{bus="nats"\} (\d+)$/m)).toBe(1);

      const received: BusMessage[] = [];
      const sub = app.bus.subscribe("load.events", { from: { afterSeq: 0 } });
      const reading = (async () => {
        for await (const m of sub) received.push(m);
      })();

      // The load: a publisher that never stops trying until told to.
      const acked: number[] = [];
      let failed = 0;
      let running = true;
      let n = 0;
      const publishing = (async () => {
        while (running) {
          const body = new TextEncoder().encode(String(n++));
          await app.bus.publish("load.events", body).then(
            (seq) => void acked.push(seq),
            () => void failed++,
          );
        }
      })();
      await until("events before the restart", async () => acked.length >= 200);

      let ackedBeforeRestart = 0;
      await nats.restart({
        signal: "SIGTERM",
        whileDown: async () => {
          await until("/readyz to report the bus down", async () => {
            const r = await readyz(url);
            return r.status === 503 && r.checks.some((c) => c.name === "bus" && !c.ok && typeof c.error === "string");
          });
          expect(await metric(url, /^roz_bus_connected\{bus="nats"\} (\d+)$/m)).toBe(0);
          ackedBeforeRestart = acked.length;
        },
      });
      await until("/readyz to be ready again", async () => (await readyz(url)).status === 200);
      expect(app.bus.health?.().reconnects).toBeGreaterThanOrEqual(1);
      expect(await metric(url, /^roz_bus_reconnects_total\{bus="nats"\} (\d+)$/m)).toBeGreaterThanOrEqual(1);
      expect(await metric(url, /^roz_bus_connected\{bus="nats"\} (\d+)$/m)).toBe(1);

      // After recovery, every publish is acknowledged again.
      const afterRecovery = acked.length;
      await until("events after recovery", async () => acked.length >= afterRecovery + 200);
      running = false;
      await publishing;

      // Every acknowledged event (before, during and after the outage) reaches the old subscription, in order.
      const want = new Set(acked);
      await until(`all ${acked.length} acknowledged events on the subscription`, async () => received.filter((m) => want.has(m.seq)).length === want.size);
      sub.close();
      await reading;
      const seqs = received.map((m) => m.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      expect(new Set(seqs).size).toBe(seqs.length);
      expect(ackedBeforeRestart).toBeGreaterThanOrEqual(200);
      console.info(`[nats restart] ${acked.length} events acknowledged, ${failed} publishes failed during the outage, ${received.length} received`);
    });

    it("a NATS server that comes back without its store gets the stream again", { timeout: 60_000 }, async () => {
      const { url, app } = server;
      await nats.restart({ wipeStore: true, whileDown: () => until("/readyz to report the bus down", async () => (await readyz(url)).status === 503) });
      await until("/readyz to be ready again", async () => (await readyz(url)).status === 200);
      // Publishing may race the stream's re-creation right after the reconnect: retry until it lands.
      let seq = 0;
      await until("a publish to land on the recreated stream", async () => {
        seq = await app.bus.publish("load.events", new Uint8Array([1])).catch(() => 0);
        return seq > 0;
      });
      expect(seq).toBe(1);
    });
  });
}
