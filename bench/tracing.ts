/**
 * Section "tracing": what OpenTelemetry traces cost. The load of `scale` (sessions streaming
 * 100 timestamped deltas/s from the fake provider, one turn each) runs against two servers of
 * ours, alternated round by round: one without an OTLP endpoint (tracing unset: no SDK loaded)
 * and one exporting every turn's spans over OTLP/HTTP protobuf to a real receiver in the
 * driver (test/support/otlp-receiver.ts). Each server's CPU per delta is its CPU time over
 * the run (turn start, persistence and, for the traced one, span export included) divided
 * by the deltas.
 */
import { startOtlpReceiver } from "../test/support/otlp-receiver.ts";
import type { IpcChild } from "./ipc.ts";
import { type Load, overRounds, RATE, runLoad, spread, startClients, startFake } from "./paced-load.ts";
import { type ServerProcess, startServerProcess } from "./server-process.ts";
import { type BenchOptions, fmt, pick, progress, type Row, sleep } from "./support.ts";

/** With tracing on, CPU per delta may rise by this much at most (session-behaviour.md §13: "Unset, tracing costs nothing"; issue: ≤ 5 % on). */
const MAX_RATIO = 1.05;
/** The traced server exports a batch this soon after its spans end, and every sample waits a little longer: the export is counted. */
const EXPORT_DELAY_MS = 100;
const SETTLE_MS = 400;

type Side = "unset" | "on";

async function cpuPerDelta(rig: { fake: IpcChild; clients: IpcChild; fakeBaseURL: string }, server: ServerProcess, load: Load): Promise<number> {
  const sample = async () => {
    await sleep(SETTLE_MS);
    return server.stats();
  };
  const { before, after } = await runLoad(rig, load, "ours", server.url, sample);
  return (after.cpuUs - before.cpuUs) / (load.sessions * load.tokens);
}

export async function runTracing(options: BenchOptions): Promise<Row[]> {
  const sessions = pick(options, 200, 100);
  const seconds = pick(options, 3, 2);
  const rounds = pick(options, 6, 4);
  const load: Load = { sessions, tokens: Math.round(RATE * seconds), warmup: 0 };
  const receiver = await startOtlpReceiver();
  const { fake, fakeBaseURL } = await startFake();
  const env = { OPENAI_API_KEY: "bench", OPENAI_BASE_URL: fakeBaseURL, ROZ_OPENAI_API: "chat" };
  const servers: Partial<Record<Side, ServerProcess>> = {};
  let clients: IpcChild | undefined;
  try {
    servers.unset = await startServerProcess({ kind: "roz", env });
    servers.on = await startServerProcess({
      kind: "roz",
      env: { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: String(EXPORT_DELAY_MS) },
    });
    clients = await startClients();
    const rig = { fake, clients, fakeBaseURL };
    // Not counted: V8 settles (optimized code, young generation grown to the allocation rate) in both.
    progress(`tracing: warm-up, ${sessions} sessions for ${seconds} s through each server`);
    for (const side of ["unset", "on"] as const) await cpuPerDelta(rig, servers[side]!, load);
    const measured: Record<Side, number>[] = [];
    for (let r = 0; r < rounds; r++) {
      const order: Side[] = r % 2 === 0 ? ["unset", "on"] : ["on", "unset"];
      progress(`tracing: round ${r + 1} of ${rounds}, ${sessions} sessions x ${RATE} deltas/s for ${seconds} s, ${order.join(" then ")}`);
      const round: Partial<Record<Side, number>> = {};
      for (const side of order) round[side] = await cpuPerDelta(rig, servers[side]!, load);
      measured.push(round as Record<Side, number>);
    }
    const unset = overRounds(measured, (r) => r.unset);
    const on = overRounds(measured, (r) => r.on);
    const ratio = overRounds(measured, (r) => r.on / r.unset);
    const turns = (rounds + 1) * sessions;
    const received = receiver.spans.filter((s) => s.name === "invoke_agent").length;
    return [
      {
        metric: `${sessions}x${RATE}/s: server CPU per delta, tracing unset`,
        measured: `${fmt(unset.median, 1)} µs`,
        value: unset.median,
        note: `median of ${rounds} rounds, ${spread(unset, 1)}; no SDK loaded, the layers skip tracing with a null check`,
      },
      {
        metric: `${sessions}x${RATE}/s: server CPU per delta, tracing on`,
        measured: `${fmt(on.median, 1)} µs`,
        value: on.median,
        note: `${spread(on, 1)}; OTLP http/protobuf to a local receiver, ${fmt(received)} of ${fmt(turns)} turns' spans received (chat spans too)`,
      },
      {
        metric: `${sessions}x${RATE}/s: server CPU per delta, on / unset`,
        target: `≤ ${fmt(MAX_RATIO, 2)}`,
        measured: fmt(ratio.median, 3),
        ok: ratio.median <= MAX_RATIO,
        value: ratio.median,
        note: `median of per-round ratios (the order alternates), ${spread(ratio, 3)}; the machine is shared: compare the spread`,
      },
    ];
  } finally {
    await clients?.close();
    await servers.unset?.close();
    await servers.on?.close();
    await fake.close();
    await receiver.close();
  }
}
