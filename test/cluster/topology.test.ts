// The multi-node topology on loopback: two roz processes sharing one PostgreSQL database and
// one nats-server behind HAProxy (the repository's deploy/haproxy.cfg). REST and StreamSession
// work through HAProxy and reach both nodes; HAProxy's health checks on /readyz take a node
// that drains out of the rotation and put it back once it is ready.
// Skips with a notice when PostgreSQL, nats-server or haproxy is missing (fails under CI=true).
import { afterAll, describe, expect, it } from "vitest";
import { activeSessions, type Cluster } from "../support/cluster.ts";
import { acquire, clusterTest, release, sharedPrerequisites } from "../support/shared-cluster.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { readTurn, rq, startSession, textOf, turnCompleteOf } from "../support/session-protocol.ts";

const pre = await sharedPrerequisites();

const json = async (url: string, init?: RequestInit): Promise<{ status: number; body: Record<string, unknown> }> => {
  const r = await fetch(url, init);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

if (pre === undefined) {
  describe.skip("two nodes behind HAProxy (PostgreSQL, nats-server or haproxy missing)", () => {
    it("needs PostgreSQL, nats-server and haproxy", () => undefined);
  });
} else {
  describe("two nodes behind HAProxy", () => {
    let cluster: Cluster;
    clusterTest.beforeAll(async ({ topology }) => {
      cluster = await acquire(topology);
    }, 120_000);
    afterAll(() => release(cluster));

    it("REST through HAProxy reaches both nodes, which share one store and one bus", async () => {
      // Round robin alternates, but a request HAProxy retries elsewhere (`option redispatch`:
      // a pooled connection to a node restarted by an earlier file) skips a turn.
      const seen = new Set<string>();
      for (let i = 0; i < 20 && seen.size < 2; i++) {
        const { status, body } = await json(`${cluster.url}/v1/version`);
        expect(status).toBe(200);
        expect(body).toMatchObject({ store: "postgres", bus: "nats" });
        seen.add(String(body["node_id"]));
      }
      expect([...seen].sort(), cluster.haproxyLog().slice(-3000)).toEqual(["node-a", "node-b"]);
      for (const node of cluster.nodes) {
        const metrics = await (await fetch(`${node.url}/metrics`)).text();
        expect(metrics).toMatch(new RegExp(`^roz_node_info\\{node_id="${node.name}",bus="nats"\\} 1$`, "m"));
        expect(metrics).toMatch(/^roz_bus_connected\{bus="nats"\} 1$/m);
      }
      // An environment created through one node is visible through the other.
      const created = await json(`${cluster.url}/v1/environments`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "shared-env" }),
      });
      expect(created.status).toBe(201);
      for (const node of cluster.nodes) {
        const list = await json(`${node.url}/v1/environments`);
        expect(JSON.stringify(list.body)).toContain("shared-env");
      }
    });

    it("StreamSession over gRPC through HAProxy: sessions land on both nodes and run their turns", { timeout: 60_000 }, async () => {
      const factory = sessionClientFactory("grpc-js", cluster.url);
      const clients = Array.from({ length: 4 }, () => factory.open());
      try {
        for (const [i, client] of clients.entries()) {
          await startSession(client);
          client.send(rq.user(`hello ${i}`));
          const turn = await readTurn(client);
          expect(turnCompleteOf(turn).stopReason).toBe("end_turn");
          expect(textOf(turn)).toContain(`You said: hello ${i}`);
        }
        // Round-robin per HTTP/2 stream: both nodes run some of the four sessions.
        const counts = await Promise.all(cluster.nodes.map((n) => activeSessions(n.url)));
        expect(counts.every((c) => c >= 1)).toBe(true);
        expect(counts.reduce((a, b) => a + b, 0)).toBe(4);
      } finally {
        for (const client of clients) client.end();
        await Promise.all(clients.map((c) => c.status));
        factory.close();
      }
    });

    it("a stream cancelled through HAProxy leaves its session resumable (HAProxy passes the reset on as END_STREAM, then RST_STREAM)", {
      timeout: 60_000,
    }, async () => {
      const factory = sessionClientFactory("grpc-js", cluster.url);
      try {
        for (let i = 0; i < 10; i++) {
          const client = factory.open();
          const { sessionId } = await startSession(client);
          client.cancel();
          await expect.poll(async () => (await json(`${cluster.url}/v1/sessions/${sessionId}`)).body["status"], { timeout: 10_000 }).toBe("detached");
          const again = factory.open();
          again.send({ request: { case: "resume", value: { sessionId, afterSeq: 1n } } });
          again.send(rq.user(`again ${i}`));
          expect(textOf(await readTurn(again))).toContain(`You said: again ${i}`);
          again.send(rq.cancelSession("done"));
          expect((await again.status).code).toBe(0);
        }
      } finally {
        factory.close();
      }
    });

    it("REST DELETE on B ends a live session on A: its stream completes and it is cancelled", { timeout: 60_000 }, async () => {
      const [a, b] = cluster.nodes as [Cluster["nodes"][0], Cluster["nodes"][0]];
      const factory = sessionClientFactory("grpc-js", a.url);
      try {
        const client = factory.open();
        const { sessionId } = await startSession(client);
        expect(await activeSessions(a.url)).toBe(1);
        const deleted = await fetch(`${b.url}/v1/sessions/${sessionId}`, { method: "DELETE" });
        expect(deleted.status).toBe(204);
        expect((await client.status).code).toBe(0);
        expect(await activeSessions(a.url)).toBe(0);
        expect((await json(`${b.url}/v1/sessions/${sessionId}`)).body["status"]).toBe("cancelled");
      } finally {
        factory.close();
      }
    });

    it("a drained node leaves HAProxy's rotation; started again it comes back", { timeout: 120_000 }, async () => {
      const [a, b] = cluster.nodes as [Cluster["nodes"][0], Cluster["nodes"][0]];
      const status = await b.stop("SIGTERM");
      expect(status?.code).toBe(0);
      await cluster.waitForBackends([a.name]);
      for (let i = 0; i < 4; i++) expect((await json(`${cluster.url}/v1/version`)).body["node_id"]).toBe("node-a");
      await b.start();
      await cluster.waitForBackends([a.name, b.name]);
      // Round-robin first lets the returning node catch up, then alternates again.
      const seen = new Set<string>();
      for (let i = 0; i < 40 && seen.size < 2; i++) seen.add(String((await json(`${cluster.url}/v1/version`)).body["node_id"]));
      expect([...seen].sort()).toEqual(["node-a", "node-b"]);
    });
  });
}
