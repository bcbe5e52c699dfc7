/**
 * Entry point of the load generator's children (forked through ipc.ts), one role each:
 * - `fake`: the fake OpenAI provider, streaming timestamped deltas (timed-frames.ts);
 * - `clients`: the clients of one contender: connect-node sessions of our server
 *   (`ours`), `openai` clients reading the fake directly (`direct`), or connect-node
 *   streams of the bare connect-node server writing paced deltas itself (`bare`); and
 *   sessions held open to re-attach once their node is killed (held-sessions.ts);
 * - `bystander`: one session pinging the server every 10 ms while an attack runs.
 * Each runs in its own process so that neither shares an event loop with our server, the
 * driver or the other; stamps and arrivals use the machine's monotonic clock.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { type Bystander, startBystander } from "../test/support/bystander.ts";
import { startFakeOpenAI } from "../test/support/fake-openai/index.ts";
import { type AgentClient, type BenchStream, connectClients, finish, openStream, startSession, userMessage } from "./client.ts";
import { heldSessions } from "./held-sessions.ts";
import { failStart, serve } from "./ipc.ts";
import { chatBody, directClient } from "./session-deltas.ts";
import { mapLimit, monoMs } from "./support.ts";
import { stampsOf, timedReply } from "./timed-frames.ts";

export type Contender = "ours" | "direct" | "bare";

/** Per session, per delta (in order): arrival minus the fake's send stamp, ms. */
export type DeltaLatencies = number[][];

export interface RunResult {
  latencies: DeltaLatencies;
  /** This process's event-loop delay during the run, p99 / max, ms. */
  loopP99Ms: number;
  loopMaxMs: number;
  /** This process's CPU time during the run (user + system), µs: what reading the replies cost the clients. */
  cpuUs: number;
}

function loopMonitor() {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  return {
    take: () => {
      const taken = { loopP99Ms: h.percentile(99) / 1e6, loopMaxMs: h.max / 1e6 };
      h.reset();
      return taken;
    },
  };
}

async function fakeRole(): Promise<void> {
  const fake = await startFakeOpenAI();
  const loop = loopMonitor();
  serve(
    { baseURL: fake.baseURL },
    {
      plan: async (r) => {
        const reply = timedReply(r.tokens as number, r.rate as number);
        fake.plan(...Array.from({ length: r.count as number }, () => reply));
        loop.take();
        // The recorded requests would grow without bound over a long run.
        fake.requests.length = 0;
      },
      loop: async () => loop.take(),
      close: () => fake.close(),
    },
  );
}

/** Collects the latencies of one session's text (each delta carries its send stamp). */
const collectStamps = (into: number[], text: string, arrived: number): void => {
  for (const sent of stampsOf(text)) into.push(arrived - sent);
};

/** Each stream sends `message` and collects its stamped TextDeltas until TurnComplete. */
async function streamsRun(streams: BenchStream[], message: string): Promise<DeltaLatencies> {
  return Promise.all(
    streams.map(async (stream) => {
      const mine: number[] = [];
      stream.send(userMessage(message));
      for (;;) {
        const r = await stream.next();
        if (r === undefined) throw new Error("stream ended during the turn");
        if (r.response.case === "textDelta") collectStamps(mine, r.response.value.content, monoMs());
        else if (r.response.case === "turnComplete") return mine;
        else if (r.response.case === "error") throw new Error(`${r.response.value.code}: ${r.response.value.message}`);
      }
    }),
  );
}

async function directRun(fakeBaseURL: string, sessions: number): Promise<DeltaLatencies> {
  // One client, as our provider has one per provider.
  const client = directClient(fakeBaseURL);
  return Promise.all(
    Array.from({ length: sessions }, async () => {
      const mine: number[] = [];
      const stream = await client.chat.completions.create(chatBody);
      for await (const chunk of stream) {
        const content = chunk.choices[0]?.delta?.content;
        if (content) collectStamps(mine, content, monoMs());
      }
      return mine;
    }),
  );
}

async function clientsRole(): Promise<void> {
  const loop = loopMonitor();
  const held = heldSessions();
  let conn: ReturnType<typeof connectClients> | undefined;
  let streams: BenchStream[] = [];
  let prepared: { contender: Contender; fakeBaseURL: string; sessions: number } | undefined;
  let run: ((r: Record<string, unknown>) => Promise<DeltaLatencies>) | undefined;
  const teardown = async () => {
    await mapLimit(streams.length, 200, (i) => finish(streams[i] as BenchStream));
    streams = [];
    conn?.close();
    conn = undefined;
  };
  serve(
    {},
    {
      prepare: async (r) => {
        await teardown();
        prepared = { contender: r.contender as Contender, fakeBaseURL: r.fakeBaseURL as string, sessions: r.sessions as number };
        const { contender, sessions } = prepared;
        if (contender === "direct") {
          run = () => directRun(prepared!.fakeBaseURL, sessions);
          return;
        }
        // One connection per session, as separate clients would have, unless a proxy in
        // front limits the connections: then the sessions share them, one after the other.
        conn = connectClients(r.serverUrl as string, (r.connections as number | undefined) ?? sessions);
        const clients = conn.clients;
        const clientOf = (i: number) => clients[i % clients.length] as AgentClient;
        if (contender === "ours") {
          streams = (await mapLimit(sessions, 50, (i) => startSession(clientOf(i), { model: r.model as string }))).map((s) => s.stream);
          run = () => streamsRun(streams, "go");
        } else {
          streams = Array.from({ length: sessions }, (_, i) => openStream(clientOf(i)));
          run = (q) => streamsRun(streams, `pace ${q.tokens} ${q.rate}`);
        }
      },
      run: async (r): Promise<RunResult> => {
        if (!run) throw new Error("run before prepare");
        loop.take();
        const cpu = process.cpuUsage();
        const latencies = await run(r);
        const used = process.cpuUsage(cpu);
        return { latencies, ...loop.take(), cpuUs: used.user + used.system };
      },
      finish: teardown,
      ...held.handlers,
      close: async () => {
        await held.release();
        await teardown();
      },
    },
  );
}

/** A bystander session pinging the server while an attack runs elsewhere (section abuse). */
async function bystanderRole(): Promise<void> {
  let bystander: Bystander | undefined;
  serve(
    {},
    {
      start: async (r) => {
        bystander = await startBystander(r.url as string);
      },
      stop: async () => {
        const report = await bystander?.stop();
        bystander = undefined;
        return report;
      },
      close: async () => {
        await bystander?.stop().catch(() => undefined);
      },
    },
  );
}

const roles: Record<string, () => Promise<void>> = { fake: fakeRole, clients: clientsRole, bystander: bystanderRole };
const role = process.env.ROZ_BENCH_ROLE ?? "";
(roles[role]?.() ?? Promise.reject(new Error(`unknown role ${role}`))).catch(failStart);
