// A rolling restart of every node, one by one, under 50 live sessions (session-behaviour.md
// §10): each drained node finishes its running turns, suspends its sessions and releases them;
// their clients re-attach through HAProxy with their last seq, another node adopts, and every
// client ends with exactly the response sequence a client that never moved would have seen.
// Skips with a notice when PostgreSQL, nats-server or haproxy is missing (fails under CI=true).
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { clusterPrerequisites, startCluster, type Cluster, type ClusterPrerequisites } from "../support/cluster.ts";
import { type SessionClient, type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { caseOf, readTurn, rq, show, startSession } from "../support/session-protocol.ts";

const pre = await clusterPrerequisites();
const SESSIONS = 50;

/** One conversation's client: what it has seen (by seq, once each) and its current stream. */
interface Conversation {
  sessionId: string;
  client: SessionClient;
  seen: SessionResponse[];
}

const lastSeq = (c: Conversation): bigint => c.seen.at(-1)?.seq ?? 0n;

/** Keeps the numbered responses a stream delivered after what the conversation had. */
function keep(c: Conversation, responses: readonly SessionResponse[]): void {
  for (const r of responses) if (r.seq > lastSeq(c)) c.seen.push(r);
}

/** Re-attaches until a node takes the stream (UNAVAILABLE while none can yet). */
async function reattach(factory: SessionClientFactory, c: Conversation): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const client = factory.open();
    client.send({ request: { case: "resume", value: { sessionId: c.sessionId, afterSeq: lastSeq(c) } } });
    client.send(rq.ping());
    const first = await Promise.race([
      client.responses.nextMatching((r) => caseOf(r) === "pong", 15_000).catch(() => undefined),
      client.status.then(() => undefined),
    ]);
    if (first !== undefined) {
      c.client = client;
      return;
    }
    await client.status;
    await delay(100);
  }
  throw new Error(`no node took session ${c.sessionId}`);
}

/** Runs one turn; the turn may straddle a drain (its stream ends after it), which is followed by a re-attach. */
async function turn(c: Conversation, text: string): Promise<void> {
  c.client.send(rq.user(`script: ${JSON.stringify({ responses: [[{ text: `${text} part one` }, { delay_ms: 300 }, { text: " part two" }]] })}`));
  keep(c, await readTurn(c.client, 30_000));
}

if (pre === undefined) {
  describe.skip("rolling restart (PostgreSQL, nats-server or haproxy missing)", () => {
    it("needs PostgreSQL, nats-server and haproxy", () => undefined);
  });
} else {
  describe("rolling restart", () => {
    let cluster: Cluster;
    beforeAll(async () => {
      cluster = await startCluster(pre as ClusterPrerequisites, {
        nodes: 2,
        env: { ROZ_SESSION_RATE_LIMIT_PER_MINUTE: "0", ROZ_RATE_LIMIT_PER_MINUTE: "0", ROZ_MAX_STREAMS_PER_KEY: "0" },
      });
    }, 120_000);
    afterAll(async () => {
      await cluster?.close();
      await pre.stop();
    });

    it(`every node restarted one by one under ${SESSIONS} live sessions: each client sees exactly what a client that never moved would`, {
      timeout: 300_000,
    }, async () => {
      const factory = sessionClientFactory("grpc-js", cluster.url);
      try {
        const conversations: Conversation[] = await Promise.all(
          Array.from({ length: SESSIONS }, async () => {
            const client = factory.open();
            const c: Conversation = { sessionId: "", client, seen: [] };
            const started = await startSession(client, { model: "scripted/default" });
            c.sessionId = started.sessionId;
            keep(c, client.responses.seen);
            return c;
          }),
        );
        await Promise.all(conversations.map((c) => turn(c, "before")));
        for (const [i, node] of cluster.nodes.entries()) {
          // Turns are running on every node when this one drains: its own finish within the grace period.
          const running = conversations.map((c) => turn(c, `during ${node.name}`));
          await delay(100);
          expect((await node.stop("SIGTERM"))?.code).toBe(0);
          await Promise.all(running);
          // The drained node's clients lost their streams (with HAProxy in between, others may too).
          const moved = conversations.filter((c) => c.client.ended);
          expect(moved.length, `sessions on ${node.name}`).toBeGreaterThan(0);
          await Promise.all(moved.map((c) => reattach(factory, c)));
          await Promise.all(conversations.map((c) => turn(c, `after ${node.name} ${i}`)));
          await node.start();
          await cluster.waitForBackends(cluster.nodes.map((n) => n.name));
        }
        // What a client that never moved sees: the whole sequence again, from seq 1.
        for (const c of conversations) {
          const fresh = factory.open();
          fresh.send({ request: { case: "resume", value: { sessionId: c.sessionId, afterSeq: 0n } } });
          const replay: SessionResponse[] = [];
          while (replay.length < c.seen.length) replay.push(await fresh.next(15_000));
          expect(replay.map(show)).toEqual(c.seen.map(show));
          // Increasing; the only numbers missing are the re-attach pings' pongs (numbered, never replayed).
          expect(c.seen.every((r, k) => k === 0 || r.seq > c.seen[k - 1]!.seq)).toBe(true);
          expect(c.seen.length).toBeGreaterThanOrEqual(1 + 5 * (1 + 2 * cluster.nodes.length));
          fresh.send(rq.cancelSession("done"));
          c.client.cancel();
          await fresh.status;
        }
      } finally {
        factory.close();
      }
    });
  });
}
