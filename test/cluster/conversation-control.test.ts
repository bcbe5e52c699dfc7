// §11 across nodes: REST rollback and fork received by a node that does not run the session.
// The rollback is asked of the owner over NATS (its attached stream gets RolledBack); a fork
// reads the source from the shared store and runs on the node that received it. Skips with a
// notice when PostgreSQL, nats-server or haproxy is missing (fails under CI=true).
import { afterAll, describe, expect, it } from "vitest";
import type { Cluster } from "../support/cluster.ts";
import { acquire, clusterTest, release, sharedPrerequisites } from "../support/shared-cluster.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { nextOf, readTurn, rq, startSession, turnCompleteOf } from "../support/session-protocol.ts";

const pre = await sharedPrerequisites();

const post = async (url: string, body: unknown) => {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: response.status, json: (await response.json()) as Record<string, any> };
};

if (pre === undefined) {
  describe.skip("conversation control across nodes (PostgreSQL, nats-server or haproxy missing)", () => {
    it("needs PostgreSQL, nats-server and haproxy", () => undefined);
  });
} else {
  describe("conversation control across nodes", () => {
    let cluster: Cluster;
    clusterTest.beforeAll(async ({ topology }) => {
      cluster = await acquire(topology);
    }, 120_000);
    afterAll(() => release(cluster));

    it("a rollback sent to B reaches the session on A; a fork sent to B copies A's session", { timeout: 60_000 }, async () => {
      const [a, b] = cluster.nodes as [Cluster["nodes"][0], Cluster["nodes"][0]];
      const onA = sessionClientFactory("grpc-js", a.url);
      try {
        const client = onA.open();
        const { sessionId } = await startSession(client);
        for (const prompt of ["first", "second"]) {
          client.send(rq.user(prompt));
          expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
        }
        expect(await post(`${b.url}/v1/sessions/${sessionId}/rollback`, { turns: 1 })).toEqual({ status: 200, json: { turns: 1, remaining_turns: 1 } });
        expect(await nextOf(client, "rolledBack")).toMatchObject({ turns: 1, remainingTurns: 1 });
        expect(await post(`${b.url}/v1/sessions/${sessionId}/rollback`, { turns: 2 })).toMatchObject({
          status: 400,
          json: { error: { code: "invalid_argument" } },
        });

        const fork = await post(`${b.url}/v1/sessions/${sessionId}/fork`, {});
        expect(fork).toMatchObject({ status: 201, json: { status: "detached", turn_count: 2 } });
        const turns = (await (await fetch(`${b.url}/v1/sessions/${fork.json.id}/messages?format=turns`)).json()) as { turns: Record<string, unknown>[] };
        expect(turns.turns.map((t) => [t.turn, t.rolled_back ?? false])).toEqual([
          [1, false],
          [2, true],
        ]);
        client.send(rq.cancelSession());
        await client.status;
        await fetch(`${b.url}/v1/sessions/${fork.json.id}`, { method: "DELETE" });
      } finally {
        onA.close();
      }
    });
  });
}
