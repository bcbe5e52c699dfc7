/**
 * The client library against raw connect-node: the same session relay (`tokens` deltas as fast
 * as the fake provider streams them) read once through @roz/client (its gRPC bidi session, turn
 * iteration, seq bookkeeping) and once through a bare connect-node StreamSession, in this process.
 */
import { RozClient } from "@roz/client";
import type { FakeOpenAI } from "../test/support/fake-openai/index.ts";
import { BENCH_MODEL, sessionThroughput } from "./session-deltas.ts";
import type { ServerProcess } from "./server-process.ts";
import { type BenchOptions, fmt, now, perSecond, pick, progress, quantile, ratio, type Row } from "./support.ts";

const LIBRARY_TARGET = 0.9;

/** `tokens` deltas of one turn read through @roz/client; deltas per second, first send to last delta. */
async function libraryThroughput(server: ServerProcess, fake: FakeOpenAI, tokens: number): Promise<number> {
  const roz = new RozClient({ baseUrl: server.url });
  try {
    const session = await roz.startSession({ model: BENCH_MODEL });
    fake.plan({ tokens });
    const started = now();
    const turn = session.send("go");
    let deltas = 0;
    let last = started;
    for await (const ev of turn) {
      if (ev.type !== "text_delta") continue;
      // The server merges a burst into fewer messages: count the tokens ("tok " each).
      deltas += ev.content.length / 4;
      last = now();
    }
    const { stopReason } = await turn.done;
    if (stopReason !== "end_turn") throw new Error(`turn ended with ${stopReason}`);
    if (deltas !== tokens) throw new Error(`expected ${tokens} deltas, got ${deltas}`);
    await session.close();
    return deltas / ((last - started) / 1000);
  } finally {
    roz.close();
  }
}

/**
 * Rows: deltas per second through the library and through raw connect-node (best of each), and
 * the median of the paired ratios (each round runs both, one right after the other, the order
 * alternating): on a shared machine a pair sees the same load, so its ratio is what compares.
 */
export async function clientLibraryRows(options: BenchOptions, server: ServerProcess, fake: FakeOpenAI): Promise<Row[]> {
  // Longer turns and more rounds than the rows before: the client's own work is small (a turn of
  // 50,000 deltas is some 60 merged messages), so what differs between the sides is mostly noise.
  const tokens = pick(options, 100_000, 50_000);
  const rounds = pick(options, 9, 5);
  progress(`session: @roz/client against raw connect-node, a warm-up, then ${rounds} paired rounds of ${fmt(tokens)} deltas`);
  // Uncounted: the library's code runs cold at first, while raw connect-node's is warm from the rows before.
  await libraryThroughput(server, fake, tokens / 4);
  await sessionThroughput(server, fake, tokens / 4);
  const pairs: { library: number; raw: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    const raw = async () => (await sessionThroughput(server, fake, tokens)).perSecond;
    const library = () => libraryThroughput(server, fake, tokens);
    if (i % 2 === 0) pairs.push({ library: await library(), raw: await raw() });
    else {
      const r = await raw();
      pairs.push({ library: await library(), raw: r });
    }
  }
  const ratios = pairs.map((p) => p.library / p.raw).sort((a, b) => a - b);
  const median = quantile(ratios, 0.5);
  return [
    {
      metric: "deltas/s, 1 session: @roz/client",
      measured: perSecond(Math.max(...pairs.map((p) => p.library))),
      note: `best of ${rounds}; ${fmt(tokens)} deltas, gRPC bidi, read as turn events`,
    },
    {
      metric: "deltas/s, 1 session: raw connect-node",
      measured: perSecond(Math.max(...pairs.map((p) => p.raw))),
      note: `best of ${rounds}; read as SessionResponses`,
    },
    {
      metric: "deltas/s, 1 session: @roz/client / raw",
      target: `≥ ${LIBRARY_TARGET.toFixed(2)}`,
      measured: ratio(median),
      ok: median >= LIBRARY_TARGET,
      note: `median of ${rounds} paired rounds (${ratio(ratios[0] ?? 0)}–${ratio(ratios.at(-1) ?? 0)})`,
    },
  ];
}
