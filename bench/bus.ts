/**
 * Section "bus": the event bus between nodes. Publish-to-delivery latency of one subscriber
 * (paced at 1,000 events/s, 1 KB protobuf-sized payloads) and flat-out publish throughput, on
 * the NATS JetStream bus (a nats-server started here) against the in-memory bus of the same
 * run. The NATS figures include a JetStream ack per publish and a network hop on loopback.
 */
import { createMemoryBus, createNatsBus, type EventBus } from "../src/bus/index.ts";
import { findNatsServer, natsForTests } from "../test/support/nats.ts";
import { type BenchOptions, fmt, ms, now, perSecond, pick, progress, type Row, sleep, summarize } from "./support.ts";

/** Target for the NATS hop a relayed session response takes (p99, paced load). */
const NATS_P99_TARGET_MS = 5;

async function latency(bus: EventBus, count: number, ratePerSecond: number): Promise<number[]> {
  const subject = `bench.lat.${Math.random().toString(36).slice(2)}`;
  const sub = bus.subscribe(subject, { from: "new" });
  const sentAt = new Map<number, number>();
  const samples: number[] = [];
  let warmedUp!: () => void;
  const warm = new Promise<void>((resolve) => (warmedUp = resolve));
  const reading = (async () => {
    for await (const m of sub) {
      if (m.data[3] === 1) {
        warmedUp();
        continue;
      }
      const i = m.data[0]! | (m.data[1]! << 8) | (m.data[2]! << 16);
      samples.push(now() - sentAt.get(i)!);
      if (samples.length === count) return;
    }
  })();
  // A networked subscription is in place once a first (untimed) message came through it.
  const marker = new Uint8Array(1024);
  marker[3] = 1;
  await bus.publish(subject, marker);
  await warm;
  const gap = 1000 / ratePerSecond;
  const start = now();
  for (let i = 0; i < count; i++) {
    const due = start + i * gap;
    const wait = due - now();
    if (wait > 1) await sleep(wait);
    const payload = new Uint8Array(1024);
    payload[0] = i & 255;
    payload[1] = (i >> 8) & 255;
    payload[2] = (i >> 16) & 255;
    sentAt.set(i, now());
    void bus.publish(subject, payload);
  }
  await reading;
  sub.close();
  return samples.sort((a, b) => a - b);
}

async function throughput(bus: EventBus, count: number): Promise<number> {
  const subject = `bench.tp.${Math.random().toString(36).slice(2)}`;
  const payload = new Uint8Array(1024);
  const started = now();
  const inFlight: Promise<number>[] = [];
  for (let i = 0; i < count; i++) {
    inFlight.push(bus.publish(subject, payload));
    if (inFlight.length >= 256) await Promise.all(inFlight.splice(0));
  }
  await Promise.all(inFlight);
  return count / ((now() - started) / 1000);
}

export async function runBus(options: BenchOptions): Promise<Row[]> {
  if (findNatsServer() === undefined) return [{ metric: "NATS bus", measured: "skipped", note: "no nats-server installed" }];
  const nats = (await natsForTests())!;
  const natsBus = await createNatsBus({ servers: nats.url, prefix: "bench" });
  const memoryBus = createMemoryBus();
  try {
    const count = pick(options, 3000, 1000);
    progress("bus: paced latency, memory then NATS");
    const mem = summarize(await latency(memoryBus, count, 1000));
    const net = summarize(await latency(natsBus, count, 1000));
    progress("bus: publish throughput");
    const memRate = await throughput(memoryBus, pick(options, 50_000, 10_000));
    const natsRate = await throughput(natsBus, pick(options, 20_000, 5_000));
    return [
      { metric: "delivery latency, memory bus p50 / p99", measured: `${ms(mem.p50)} / ${ms(mem.p99)}`, note: "baseline" },
      {
        metric: "delivery latency, NATS bus p50 / p99",
        target: `p99 < ${NATS_P99_TARGET_MS} ms`,
        measured: `${ms(net.p50)} / ${ms(net.p99)}`,
        ok: net.p99 < NATS_P99_TARGET_MS,
        note: `${fmt(net.p99 / Math.max(mem.p99, 0.001), 1)}× the memory bus p99`,
      },
      { metric: "publish throughput, memory bus (1 KB)", measured: perSecond(memRate), note: "baseline" },
      { metric: "publish throughput, NATS bus (1 KB, acked)", measured: perSecond(natsRate), note: `${fmt((natsRate / memRate) * 100, 1)}% of the memory bus` },
    ];
  } finally {
    await natsBus.close();
    await memoryBus.close();
    await nats.stop();
  }
}
