/**
 * Section "anthropic": deltas/s through one session on provider `anthropic` (our adapter
 * over the Messages API) against the official `@anthropic-ai/sdk` reading the same fake
 * Messages stream directly. Shares the measurement with section "session"
 * (session-deltas.ts); only the provider and the direct reader differ.
 */
import Anthropic from "@anthropic-ai/sdk";
import { type FakeOpenAI, startFakeOpenAI } from "../test/support/fake-openai/index.ts";
import { summarizeProfile } from "./profile.ts";
import { type DirectTextStream, directThroughput, sessionThroughput, type Throughput } from "./session-deltas.ts";
import { startServerProcess } from "./server-process.ts";
import { type BenchOptions, fmt, perSecond, pick, progress, ratio, type Row } from "./support.ts";

const THROUGHPUT_TARGET = 0.7;
const MODEL = "anthropic/fake-model";

/** The SDK as a user would stream with it: `messages.create({stream: true})`, text deltas counted. */
function anthropicTextStream(fake: FakeOpenAI): DirectTextStream {
  const client = new Anthropic({ apiKey: "bench", baseURL: fake.url, maxRetries: 0, openTelemetry: false });
  return async function* () {
    const stream = await client.messages.create({ model: "fake-model", max_tokens: 1024, messages: [{ role: "user", content: "go" }], stream: true });
    for await (const event of stream) {
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") yield event.delta.text;
    }
  };
}

/** Runs the section and returns its table rows. */
export async function runAnthropic(options: BenchOptions): Promise<Row[]> {
  const tokens = pick(options, 100_000, 20_000);
  const rounds = pick(options, 2, 1);
  const fake = await startFakeOpenAI();
  const server = await startServerProcess({ kind: "roz", env: { ANTHROPIC_API_KEY: "bench", ANTHROPIC_BASE_URL: fake.url } }, { profile: options.profile });
  let ours: Throughput = { perSecond: 0, cpuUs: 0 };
  let direct = 0;
  try {
    progress(`anthropic: throughput, ${rounds} round(s) of ${fmt(tokens)} deltas: ours, @anthropic-ai/sdk direct`);
    const read = anthropicTextStream(fake);
    // Alternate rounds, keep each side's best: noise on the shared machine hurts no side alone.
    for (let i = 0; i < rounds; i++) {
      const o = await sessionThroughput(server, fake, tokens, MODEL);
      if (o.perSecond > ours.perSecond) ours = o;
      direct = Math.max(direct, await directThroughput(fake, tokens, read));
    }
  } finally {
    const profile = await server.close();
    await fake.close();
    if (profile) summarizeProfile(profile, "anthropic: our server (throughput)");
  }
  const r = ours.perSecond / direct;
  return [
    {
      metric: "deltas/s, 1 session on anthropic: ours",
      measured: perSecond(ours.perSecond),
      note: `${fmt(tokens)} deltas, server CPU ${fmt(ours.cpuUs, 1)} µs/delta`,
    },
    { metric: "deltas/s, 1 session: @anthropic-ai/sdk direct", measured: perSecond(direct) },
    { metric: "deltas/s, 1 session: ours / direct", target: `≥ ${THROUGHPUT_TARGET.toFixed(2)}`, measured: ratio(r), ok: r >= THROUGHPUT_TARGET },
  ];
}
