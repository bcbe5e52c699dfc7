/**
 * Session deltas: how fast one session relays a provider that streams as
 * fast as it can, compared with the same fake provider consumed directly by the `openai`
 * client in this process. (The latency under load is section `scale`.)
 */
import OpenAI from "openai";
import type { FakeOpenAI } from "../test/support/fake-openai/index.ts";
import { type AgentClient, connectClients, finish, openStream, startSession, userMessage } from "./client.ts";
import type { ServerProcess } from "./server-process.ts";
import { now } from "./support.ts";

export const BENCH_MODEL = "openai/fake-model";

/** The `openai` client as our provider builds it: no retries, the fake's base URL. */
export const directClient = (baseURL: string): OpenAI => new OpenAI({ apiKey: "bench", baseURL, maxRetries: 0 });

export const chatBody = {
  model: "fake-model",
  messages: [{ role: "user" as const, content: "go" }],
  stream: true as const,
  stream_options: { include_usage: true },
};

export interface Throughput {
  /** Deltas per second, first request to last delta. */
  perSecond: number;
  /** Server CPU per delta, µs. */
  cpuUs: number;
}

/** `tokens` deltas through one session of our server, on `model` (a provider pointed at `fake`). */
export async function sessionThroughput(server: ServerProcess, fake: FakeOpenAI, tokens: number, model = BENCH_MODEL): Promise<Throughput> {
  const conn = connectClients(server.url, 1);
  try {
    const { stream } = await startSession(conn.clients[0] as AgentClient, { model });
    fake.plan({ tokens });
    const before = await server.stats();
    const started = now();
    stream.send(userMessage("go"));
    let deltas = 0;
    let last = started;
    for (;;) {
      const r = await stream.next();
      if (r === undefined) throw new Error("stream ended during the turn");
      if (r.response.case === "textDelta") {
        // The server merges a burst into fewer messages: count the tokens ("tok " each).
        deltas += r.response.value.content.length / 4;
        last = now();
      } else if (r.response.case === "turnComplete") {
        if (r.response.value.stopReason !== "end_turn") throw new Error(`turn ended with ${r.response.value.stopReason}`);
        break;
      } else if (r.response.case === "error") throw new Error(`${r.response.value.code}: ${r.response.value.message}`);
    }
    const after = await server.stats();
    await finish(stream);
    if (deltas !== tokens) throw new Error(`expected ${tokens} deltas, got ${deltas}`);
    return { perSecond: deltas / ((last - started) / 1000), cpuUs: (after.cpuUs - before.cpuUs) / deltas };
  } finally {
    conn.close();
  }
}

/** The transport's own ceiling: a bare connect-node server streaming `tokens` TextDeltas on one call. */
export async function bareStreamThroughput(bare: ServerProcess, tokens: number): Promise<number> {
  const conn = connectClients(bare.url, 1);
  try {
    const stream = openStream(conn.clients[0] as AgentClient);
    const started = now();
    stream.send(userMessage(`flood ${tokens}`));
    let deltas = 0;
    for (let r = await stream.next(); r?.response.case !== "turnComplete"; r = await stream.next()) {
      if (r === undefined) throw new Error("bare stream ended early");
      if (r.response.case === "textDelta") deltas++;
    }
    const perSecond = deltas / ((now() - started) / 1000);
    await finish(stream);
    return perSecond;
  } finally {
    conn.close();
  }
}

/** One reply of the fake read by a provider's SDK directly: its text deltas, in order. */
export type DirectTextStream = () => AsyncIterable<string>;

/** The `openai` client streaming the fake's Chat Completions reply. */
export function openaiTextStream(fake: FakeOpenAI): DirectTextStream {
  const client = directClient(fake.baseURL);
  return async function* () {
    const stream = await client.chat.completions.create(chatBody);
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta?.content;
      if (content) yield content;
    }
  };
}

/** The same reply consumed by an SDK directly (the `openai` client unless `read` says otherwise). */
export async function directThroughput(fake: FakeOpenAI, tokens: number, read: DirectTextStream = openaiTextStream(fake)): Promise<number> {
  fake.plan({ tokens });
  const started = now();
  let deltas = 0;
  for await (const _text of read()) deltas++;
  if (deltas !== tokens) throw new Error(`expected ${tokens} deltas, got ${deltas}`);
  return deltas / ((now() - started) / 1000);
}
