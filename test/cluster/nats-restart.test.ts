// nats-server restarted (stopped, then started again on the same port and store) under live
// sessions of two nodes, with turns running: clients connected to the session's owner, clients
// relayed through the other node, clients through HAProxy. While NATS is down every node says
// so (/readyz 503 naming the bus, roz_bus_connected 0) and HAProxy holds none UP; once it is
// back every node reconnects by itself. A relayed stream that lost responses meanwhile is
// relayed again by its node from the last seq it passed on, so its client's stream goes on;
// any stream that does end must end with a retryable UNAVAILABLE, and its client re-attaches
// with `resume{after_seq}`.
// In the end each client saw exactly what a fresh replay from seq 1 shows (nothing lost,
// nothing twice) and REST has every turn. A relayed turn whose last responses went out while
// NATS was down is noticed at the next relay keep round, without waiting for a keepalive.
// Skips with a notice when PostgreSQL, nats-server or haproxy is missing (fails under CI=true).
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import type { SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import {
  activeSessions,
  NO_RATE_LIMITS,
  type Cluster,
  type ClusterPrerequisites,
  type Conversation,
  expectSameAsReplay,
  lastSeq,
  relayedStreams,
} from "../support/cluster.ts";
import { acquire, clusterTest, release, sharedPrerequisites } from "../support/shared-cluster.ts";
import { StreamEndedError } from "../support/grpc-js-client.ts";
import { metric, readyz } from "../support/server.ts";
import { type ClientKind, type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { caseOf, rq, show, startSession, textOf } from "../support/session-protocol.ts";

const pre = await sharedPrerequisites();

/** How a conversation's client reaches its session. */
type Path = "owner" | "relayed" | "haproxy";

interface Client extends Conversation {
  path: Path;
  /** Where it opens its streams (and re-attaches). */
  factory: SessionClientFactory;
  /** How each of its streams that ended mid-conversation ended (status code and message). */
  endings: string[];
}

/** The during-the-outage turn: text in parts, spaced out, so that some are produced while NATS is down. */
const PARTS = 12;
const slowTurn = `script: ${JSON.stringify({ responses: [Array.from({ length: PARTS }, (_, i) => [{ text: ` part${i}` }, { delay_ms: 500 }]).flat()] })}`;

const connected = /^roz_bus_connected\{bus="nats"\} (\d+)$/m;
const reconnects = /^roz_bus_reconnects_total\{bus="nats"\} (\d+)$/m;

/** Keeps what a client must see again in a replay: numbered and stored (keepalives and pongs are neither). */
function record(c: Client, r: SessionResponse): void {
  if (r.seq > 0n && caseOf(r) !== "keepalive" && caseOf(r) !== "pong") c.seen.push(r);
}

/**
 * Reads through the next `turn_complete`. A stream that ends before it must end with
 * UNAVAILABLE (14); the client then re-attaches after its last seq, as often as it takes.
 */
async function readTurnAcross(c: Client): Promise<void> {
  for (let ended = 0; ; ) {
    let r: SessionResponse;
    try {
      r = await c.client.next(30_000);
    } catch (err) {
      if (!(err instanceof StreamEndedError)) throw err;
      const status = await c.client.status;
      c.endings.push(`${status.code} ${status.message}`);
      if (status.code !== 14)
        throw new Error(
          `session ${c.sessionId} (${c.path}, ${c.client.kind}): stream ended with ${status.code} ${status.message} after ${c.client.responses.seen.map(show).join(", ")}`,
        );
      if (++ended > 300) throw new Error(`session ${c.sessionId} (${c.path}): no re-attach succeeded: ${c.endings.slice(-3).join("; ")}`);
      if (ended > 1) await delay(100);
      c.client = c.factory.open();
      c.client.send({ request: { case: "resume", value: { sessionId: c.sessionId, afterSeq: lastSeq(c) } } });
      continue;
    }
    record(c, r);
    if (caseOf(r) === "turnComplete") return;
  }
}

/**
 * Per owner node (A, B), client library and path: one started conversation. A relayed one is
 * re-attached on the other node, an HAProxy one through HAProxy (which picks a node). The
 * factories opened go to `factories` (for closing).
 */
async function openClients(cluster: Cluster, kinds: readonly ClientKind[], paths: readonly Path[], factories: SessionClientFactory[]): Promise<Client[]> {
  const factory = (kind: ClientKind, url: string): SessionClientFactory => {
    const f = sessionClientFactory(kind, url);
    factories.push(f);
    return f;
  };
  const [a, b] = cluster.nodes as [Cluster["nodes"][0], Cluster["nodes"][0]];
  const clients: Client[] = [];
  for (const [owner, other] of [
    [a, b],
    [b, a],
  ] as const) {
    for (const kind of kinds) {
      const on = { owner: factory(kind, owner.url), relayed: factory(kind, other.url), haproxy: factory(kind, cluster.url) };
      for (const path of paths) {
        const first = (path === "haproxy" ? on.haproxy : on.owner).open();
        const c: Client = { sessionId: "", client: first, seen: [], path, factory: on[path], endings: [] };
        c.sessionId = (await startSession(first, { model: "scripted/default" })).sessionId;
        for (const r of first.responses.seen) record(c, r);
        if (path !== "owner") {
          first.cancel();
          await first.status;
          c.client = c.factory.open();
          c.client.send({ request: { case: "resume", value: { sessionId: c.sessionId, afterSeq: lastSeq(c) } } });
        }
        clients.push(c);
      }
    }
  }
  return clients;
}

if (pre === undefined) {
  describe.skip("NATS restart under a cluster (PostgreSQL, nats-server or haproxy missing)", () => {
    it("needs PostgreSQL, nats-server and haproxy", () => undefined);
  });
} else {
  describe("NATS restart under a cluster", () => {
    let cluster: Cluster;
    clusterTest.beforeAll(async ({ topology }) => {
      // Keepalives far apart: a relayed client must not need one to learn that responses were lost.
      cluster = await acquire(topology, { ...NO_RATE_LIMITS, ROZ_MAX_STREAMS_PER_KEY: "0", ROZ_KEEPALIVE_INTERVAL_MS: "60000" });
    }, 120_000);
    afterAll(() => release(cluster));

    it("every node is not ready while NATS is down and reconnects after; relayed clients keep their streams; no client loses or repeats a response", {
      timeout: 120_000,
    }, async () => {
      const nats = (pre as ClusterPrerequisites).nats;
      const a = cluster.nodes[0]!;
      const factories: SessionClientFactory[] = [];
      try {
        // Per owner node, client library and path: one conversation (2 × 2 × 3 = 12).
        const clients = await openClients(cluster, ["grpc-js", "connect"], ["owner", "relayed", "haproxy"], factories);
        const turn = async (text: string): Promise<void> => {
          for (const c of clients) c.client.send(rq.user(text));
          await Promise.all(clients.map(readTurnAcross));
        };

        await turn("before");
        expect((await Promise.all(cluster.nodes.map((n) => activeSessions(n.url)))).reduce((x, y) => x + y, 0)).toBe(clients.length);
        const relayedBefore = (await Promise.all(cluster.nodes.map((n) => relayedStreams(n.url, "client")))).reduce((x, y) => x + y, 0);
        expect(relayedBefore, "relayed streams").toBeGreaterThanOrEqual(4);
        expect(clients.flatMap((c) => c.endings)).toEqual([]);
        const reconnectsBefore = await Promise.all(cluster.nodes.map((n) => metric(n.url, reconnects)));

        // NATS goes down while every turn is running (each client has seen its first part).
        for (const c of clients) c.client.send(rq.user(slowTurn));
        const running = Promise.all(clients.map(readTurnAcross));
        await expect.poll(() => clients.every((c) => textOf(c.seen).includes(" part0")), { timeout: 15_000 }).toBe(true);
        let outageMs = Date.now();
        await nats.restart({
          signal: "SIGTERM",
          whileDown: async () => {
            for (const node of cluster.nodes) {
              await expect
                .poll(
                  async () => {
                    const r = await readyz(node.url);
                    return r.status === 503 && r.checks.some((check) => check.name === "bus" && !check.ok && /disconnected/.test(check.error ?? ""));
                  },
                  { timeout: 10_000 },
                )
                .toBe(true);
              expect(await metric(node.url, connected), node.name).toBe(0);
            }
            // HAProxy's checks take every node out of rotation.
            await cluster.waitForBackends([], 10_000);
          },
        });
        outageMs = Date.now() - outageMs;
        for (const [i, node] of cluster.nodes.entries()) {
          await expect.poll(async () => (await readyz(node.url)).status, { timeout: 15_000 }).toBe(200);
          expect(await metric(node.url, connected), node.name).toBe(1);
          expect(await metric(node.url, reconnects), node.name).toBeGreaterThanOrEqual((reconnectsBefore[i] ?? 0) + 1);
        }
        await running;
        await cluster.waitForBackends(cluster.nodes.map((n) => n.name));
        // A client of the owner itself never needed NATS.
        expect(clients.filter((c) => c.path === "owner").flatMap((c) => c.endings)).toEqual([]);
        const broken = clients.filter((c) => c.endings.length > 0);
        // Responses the owner sent while the client's node was still reconnecting are lost to a core-NATS line;
        // the relaying node notices the gap and relays again from the last seq: its clients never re-attach.
        expect(clients.filter((c) => c.path === "relayed").flatMap((c) => c.endings)).toEqual([]);

        await turn("after");

        for (const c of clients) {
          const what = `session ${c.sessionId} (${c.path}, ${c.client.kind})`;
          expect(textOf(c.seen), what).toContain("You said: before");
          expect(textOf(c.seen), what).toContain(Array.from({ length: PARTS }, (_, i) => ` part${i}`).join(""));
          expect(textOf(c.seen), what).toContain("You said: after");
          const turns = (await (await fetch(`${a.url}/v1/sessions/${c.sessionId}/messages?format=turns`)).json()) as { turns: { stop_reason: string }[] };
          expect(
            turns.turns.map((t) => t.stop_reason),
            what,
          ).toEqual(["end_turn", "end_turn", "end_turn"]);
          await expectSameAsReplay(factories[0]!, c, what);
          c.client.cancel();
        }
        console.info(
          `[nats restart] outage ${outageMs} ms; ${broken.length} of ${clients.length} clients re-attached (${broken.map((c) => c.path).join(", ")}); endings: ${[...new Set(broken.flatMap((c) => c.endings))].join(" | ")}`,
        );
      } finally {
        for (const f of factories) f.close();
      }
    });

    it("a relayed turn that ends while NATS is down: the next relay keep round reveals the lost responses, and they are relayed again", {
      timeout: 90_000,
    }, async () => {
      const nats = (pre as ClusterPrerequisites).nats;
      const factories: SessionClientFactory[] = [];
      try {
        const clients = await openClients(cluster, ["grpc-js"], ["relayed", "relayed"], factories);
        for (const c of clients)
          c.client.send(rq.user(`script: ${JSON.stringify({ responses: [[{ text: "first" }, { delay_ms: 1_000 }, { text: " last" }]] })}`));
        const reading = Promise.all(clients.map(readTurnAcross));
        await expect.poll(() => clients.every((c) => textOf(c.seen).includes("first")), { timeout: 15_000 }).toBe(true);
        // The rest of every turn is sent while NATS is down: nothing follows it on the line.
        await nats.restart({ signal: "SIGTERM", whileDown: () => delay(2_000) });
        const back = Date.now();
        await reading;
        const waited = Date.now() - back;
        // Two relay keep rounds (5 s each) at most, far less than a keepalive interval.
        expect(waited).toBeLessThan(15_000);
        // Noticed by the relaying node, which relays again after the last seq: the clients' streams never ended.
        expect(clients.flatMap((c) => c.endings)).toEqual([]);
        for (const c of clients) {
          expect(textOf(c.seen)).toContain("first last");
          await expectSameAsReplay(factories[0]!, c);
          c.client.cancel();
        }
        console.info(`[nats restart] relayed turns that ended during the outage complete ${waited} ms after NATS is back`);
      } finally {
        for (const f of factories) f.close();
      }
    });
  });
}
