/**
 * Tool round trip: the time from the client sending a ToolResult to the
 * server's next model request arriving at the fake provider. The baseline is the `openai`
 * client sending the very same request bodies directly (create() → arrival), so the
 * difference is what our server adds on top of the provider call itself.
 * With `steer`, a steered user message goes just before each ToolResult: the time from the
 * steer's arrival to the model request that carries it (checked to carry it), whose cost is
 * the difference to the plain round trip.
 */
import type { FakeOpenAI } from "../test/support/fake-openai/index.ts";
import { InputDelivery } from "../src/gen/roz/v1/agent_pb.js";
import { type AgentClient, benchTool, connectClients, expect, finish, type SessionRequestInit, startSession, toolResult, userMessage } from "./client.ts";
import { BENCH_MODEL, directClient } from "./session-deltas.ts";
import type { ServerProcess } from "./server-process.ts";
import { now } from "./support.ts";

export interface ToolRoundTrips {
  /** ToolResult sent → next model request arrived at the fake, ms. */
  samples: number[];
  /** The request bodies the server sent after the tool results (for the baseline). */
  bodies: unknown[];
}

/** `turns` turns of one tool call each; a new session every `perSession` turns keeps the history short. */
const steerMessage = (turn: number): SessionRequestInit => ({
  request: { case: "userMessage", value: { content: `steer ${turn}: also say hello`, delivery: InputDelivery.STEER } },
});

export async function toolRoundTrips(
  server: ServerProcess,
  fake: FakeOpenAI,
  turns: number,
  warmup: number,
  options: { perSession?: number; steer?: boolean } = {},
): Promise<ToolRoundTrips> {
  const perSession = options.perSession ?? 20;
  const conn = connectClients(server.url, 1);
  const client = conn.clients[0] as AgentClient;
  const samples: number[] = [];
  const bodies: unknown[] = [];
  try {
    let session: Awaited<ReturnType<typeof startSession>> | undefined;
    for (let turn = 0; turn < turns + warmup; turn++) {
      if (turn % perSession === 0) {
        if (session) await finish(session.stream);
        session = await startSession(client, { model: BENCH_MODEL, tools: [benchTool] });
      }
      const { stream } = session as NonNullable<typeof session>;
      fake.plan({ toolCalls: [{ name: benchTool.name, arguments: { n: turn } }] }, { text: "done" });
      stream.send(userMessage(`turn ${turn}: call the tool`));
      const request = await expect(stream, "toolRequest");
      const index = fake.requests.length;
      const arrived = fake.waitForRequest(index, 30_000).then(now);
      const sent = now();
      if (options.steer) stream.send(steerMessage(turn));
      stream.send(toolResult(request.toolCallId, `result of turn ${turn}`));
      const at = await arrived;
      if (options.steer && !JSON.stringify(fake.requests[index]?.body).includes(`steer ${turn}:`))
        throw new Error(`turn ${turn}: the steer is not in the next request`);
      const complete = await expect(stream, "turnComplete");
      if (complete.stopReason !== "end_turn") throw new Error(`tool turn ended with ${complete.stopReason}`);
      if (turn >= warmup) {
        samples.push(at - sent);
        bodies.push(fake.requests[index]?.body);
      }
    }
    if (session) await finish(session.stream);
    return { samples, bodies };
  } finally {
    conn.close();
  }
}

/** create() → arrival at the fake for the same bodies, sent by the `openai` client directly. */
export async function directRequestLatency(fake: FakeOpenAI, bodies: unknown[]): Promise<number[]> {
  const client = directClient(fake.baseURL);
  const samples: number[] = [];
  for (const body of bodies) {
    fake.plan({ text: "done" });
    const index = fake.requests.length;
    const arrived = fake.waitForRequest(index, 30_000).then(now);
    const sent = now();
    const stream = await client.chat.completions.create(body as Parameters<typeof client.chat.completions.create>[0] & { stream: true });
    samples.push((await arrived) - sent);
    for await (const _ of stream) {
      // drain
    }
  }
  return samples;
}
