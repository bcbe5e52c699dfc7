// A rolling restart of every node, one by one, under 50 live sessions (session-behaviour.md
// §10): each drained node finishes its running turns, suspends its sessions and releases them;
// their clients re-attach through HAProxy with their last seq, another node adopts, and every
// client ends with exactly the response sequence a client that never moved would have seen.
// Skips with a notice when PostgreSQL, nats-server or haproxy is missing (fails under CI=true).
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { activeSessions, NO_RATE_LIMITS, type Cluster, type Conversation, expectSameAsReplay, keep, reattach } from "../support/cluster.ts";
import { acquire, clusterTest, release, sharedPrerequisites } from "../support/shared-cluster.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { readTurn, rq, startSession } from "../support/session-protocol.ts";

const pre = await sharedPrerequisites();
const SESSIONS = 50;

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
    clusterTest.beforeAll(async ({ topology }) => {
      cluster = await acquire(topology, { ...NO_RATE_LIMITS, ROZ_MAX_STREAMS_PER_KEY: "0" });
    }, 120_000);
    afterAll(() => release(cluster));

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
          const owned = await activeSessions(node.url);
          const running = conversations.map((c) => turn(c, `during ${node.name}`));
          await delay(100);
          expect((await node.stop("SIGTERM"))?.code).toBe(0);
          await Promise.all(running);
          // Exactly the drained node's clients lost their streams (each stream goes straight to its
          // owner here): the other node's streams, on the same client and HAProxy connections, go on.
          // The first node's sessions moved to the second, so the second drains all of them.
          const moved = conversations.filter((c) => c.client.ended);
          expect(moved.length, `sessions on ${node.name}`).toBe(owned);
          if (i === 0) expect(owned, "HAProxy spreads the starts").toBeLessThan(SESSIONS);
          else expect(owned).toBe(SESSIONS);
          expect(owned).toBeGreaterThan(0);
          await Promise.all(moved.map((c) => reattach(factory, c)));
          await Promise.all(conversations.map((c) => turn(c, `after ${node.name} ${i}`)));
          await node.start();
          await cluster.waitForBackends(cluster.nodes.map((n) => n.name));
        }
        // What a client that never moved sees: the whole sequence again, from seq 1.
        for (const c of conversations) {
          // The only numbers missing are the re-attach pings' pongs (numbered, never replayed).
          await expectSameAsReplay(factory, c);
          expect(c.seen.length).toBeGreaterThanOrEqual(1 + 5 * (1 + 2 * cluster.nodes.length));
          c.client.cancel();
        }
      } finally {
        factory.close();
      }
    });
  });
}
