/**
 * Section `envelope`: the cost of the event format at the wire edge. One turn's worth of
 * text deltas is encoded per format and serialized, as a stream would send it; the flat
 * encoder (what v0.2 streams always did) is the baseline, measured in the same run.
 */
import { randomUUID } from "node:crypto";
import { toBinary } from "@bufbuild/protobuf";
import { SessionResponseSchema } from "../src/gen/roz/v1/agent_pb.js";
import { createResponseEncoder, type EventFormat } from "../src/rpc/index.ts";
import type { SequencedEvent } from "../src/session/index.ts";
import { type BenchOptions, now, perSecond, pick, type Row, ratio } from "./support.ts";

/** Encoded and serialized events per second in `format`, over `ms` milliseconds. */
function eventsPerSecond(format: EventFormat, events: readonly SequencedEvent[], ms: number): number {
  let done = 0;
  const start = now();
  while (now() - start < ms) {
    const encode = createResponseEncoder(format);
    for (const event of events) for (const response of encode(event)) toBinary(SessionResponseSchema, response);
    done += events.length;
  }
  return done / ((now() - start) / 1000);
}

export async function runEnvelope(options: BenchOptions): Promise<Row[]> {
  const sessionId = randomUUID();
  const events: SequencedEvent[] = Array.from({ length: 1000 }, (_, i) => ({
    seq: i + 1,
    sessionId,
    at: Date.now(),
    turnIndex: 1,
    event: { type: "text_delta", messageId: "m-1", text: "a few words of a delta " },
  }));
  const rounds = pick(options, 6, 2);
  eventsPerSecond("envelope", events, 200); // warm-up
  // Interleaved rounds, best of each: the machine is shared, and a neighbour's burst should
  // not land on one format only.
  const best: Record<EventFormat, number> = { flat: 0, envelope: 0, both: 0 };
  for (let round = 0; round < rounds; round++) {
    for (const format of ["flat", "envelope", "both"] as const) best[format] = Math.max(best[format], eventsPerSecond(format, events, 400));
  }
  const { flat, envelope, both } = best;
  return [
    { metric: "flat deltas encoded (baseline)", measured: perSecond(flat) },
    { metric: "envelope deltas encoded", measured: perSecond(envelope), note: `${ratio(envelope / flat)} × flat` },
    { metric: "both deltas encoded", measured: perSecond(both), note: `${ratio(both / flat)} × flat` },
    {
      // A node saturates around 20,000 lone deltas/s (DESIGN.md): at twice that, encoding
      // envelopes is not what limits an envelope stream.
      metric: "envelope deltas vs the node's delta ceiling (20,000/s)",
      target: "≥ 2",
      measured: ratio(envelope / 20_000),
      ok: envelope / 20_000 >= 2,
    },
  ];
}
