// Any node serves any session (session-behaviour.md §10): a client re-attaches through another
// node while the session's owner still runs it; the second node relays the stream and the
// client's requests to the owner over NATS, with the owner's ordering and seq. Three roz
// processes, one PostgreSQL, one nats-server. Skips with a notice when PostgreSQL, nats-server
// or haproxy is missing (fails under CI=true).
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, describe, expect, it } from "vitest";
import { AgentService, type SessionResponse, SessionRequestSchema } from "../../src/gen/roz/v1/agent_pb.js";
import { activeSessions, type Cluster, type ClusterNode, relayedStreams } from "../support/cluster.ts";
import { acquire, clusterTest, release, sharedPrerequisites } from "../support/shared-cluster.ts";
import { sessionClientFactory, type SessionClient } from "../support/session-client.ts";
import { expectCompleteLog, says, script, watch } from "../teams/support.ts";
import { nextOf, readTurn, rq, startSession, textOf, tool, turnCompleteOf } from "../support/session-protocol.ts";

const pre = await sharedPrerequisites();

/** Reads responses until one of kind `kind` (inclusive). */
async function readUntil(client: SessionClient, kind: NonNullable<SessionResponse["response"]["case"]>): Promise<SessionResponse[]> {
  const out: SessionResponse[] = [];
  for (;;) {
    const r = await client.next(20_000);
    out.push(r);
    if (r.response.case === kind) return out;
  }
}

if (pre === undefined) {
  describe.skip("relaying between live nodes (PostgreSQL, nats-server or haproxy missing)", () => {
    it("needs PostgreSQL, nats-server and haproxy", () => undefined);
  });
} else {
  describe("relaying between live nodes", () => {
    let cluster: Cluster;
    /** The topology's two nodes and a third one started for this file. */
    let nodes: ClusterNode[] = [];
    clusterTest.beforeAll(async ({ topology }) => {
      cluster = await acquire(topology);
      nodes = [...cluster.nodes, await cluster.addNode()];
    }, 120_000);
    afterAll(async () => {
      await nodes[2]?.stop();
      await release(cluster);
    });

    for (const kind of ["grpc-js", "connect"] as const) {
      it(`${kind}: a session started on A is re-attached through B mid-turn; the tool result sent to B reaches the loop on A`, {
        timeout: 60_000,
      }, async () => {
        const [a, b] = nodes as [Cluster["nodes"][0], Cluster["nodes"][0]];
        const onA = sessionClientFactory(kind, a.url);
        const onB = sessionClientFactory(kind, b.url);
        try {
          const first = onA.open();
          const { sessionId } = await startSession(first, { tools: [tool("read_file")] });
          first.send(
            rq.user(
              `script: ${JSON.stringify({ responses: [[{ text: "let me look" }, { tool_call: { name: "read_file", id: "call-relay", arguments: { path: "a" } } }], [{ text: "the file says hi" }]] })}`,
            ),
          );
          const before = await readUntil(first, "toolRequest");
          const lastSeq = before.at(-1)!.seq;
          first.cancel();
          await first.status;

          const second = onB.open();
          second.send({ request: { case: "resume", value: { sessionId, afterSeq: lastSeq - 1n } } });
          // The open tool request again, then the rest of the turn once B forwards the result.
          const resent = await nextOf(second, "toolRequest");
          expect(resent.toolCallId).toBe("call-relay");
          second.send(rq.toolResult("call-relay", "hi"));
          const rest = await readTurn(second);
          expect(textOf(rest)).toContain("the file says hi");
          expect(turnCompleteOf(rest).stopReason).toBe("end_turn");
          // Numbered by the owner: continuing from the last seq the client saw, with no gap.
          const seqs = rest.map((r) => r.seq).filter((s) => s > lastSeq);
          expect(seqs[0]).toBe(lastSeq + 1n);
          for (const [i, s] of seqs.entries()) expect(s).toBe(lastSeq + 1n + BigInt(i));
          // A keeps running it; B only relays.
          expect(await activeSessions(a.url)).toBeGreaterThanOrEqual(1);
          expect(await activeSessions(b.url)).toBe(0);
          expect(await relayedStreams(b.url, "client")).toBe(1);
          expect(await relayedStreams(a.url, "owner")).toBe(1);
          second.send(rq.ping());
          await nextOf(second, "pong");
          second.end();
          expect((await second.status).code).toBe(0);
        } finally {
          onA.close();
          onB.close();
        }
      });
    }

    it.each([true, false])("AttachSession on B and SendToSession on C drive a session that A runs (binary %s)", { timeout: 60_000 }, async (binary) => {
      const [a, b, c] = nodes as [Cluster["nodes"][0], Cluster["nodes"][0], Cluster["nodes"][0]];
      const onA = sessionClientFactory("grpc-js", a.url);
      const managers = [b, c].map((n) => new Http2SessionManager(n.url));
      const [clientB, clientC] = [b, c].map((n, i) =>
        createClient(AgentService, createConnectTransport({ baseUrl: n.url, httpVersion: "2", sessionManager: managers[i]!, useBinaryFormat: binary })),
      ) as [ReturnType<typeof createClient<typeof AgentService>>, ReturnType<typeof createClient<typeof AgentService>>];
      try {
        const first = onA.open();
        const { sessionId } = await startSession(first);
        first.cancel();
        await first.status;
        const downlink = new AbortController();
        const seen: SessionResponse[] = [];
        const reading = (async () => {
          for await (const r of clientB.attachSession({ target: { case: "sessionId", value: sessionId }, afterSeq: 0n }, { signal: downlink.signal })) {
            seen.push(r);
            if (r.response.case === "turnComplete") return;
          }
        })();
        await expect.poll(() => seen.some((r) => r.response.case === "sessionStarted"), { timeout: 10_000 }).toBe(true);
        const sent = await clientC.sendToSession({ sessionId, request: create(SessionRequestSchema, rq.user("over three nodes")) });
        expect(sent.lastSeq).toBeGreaterThanOrEqual(1n);
        await reading;
        expect(textOf(seen)).toContain("You said: over three nodes");
        for (const [i, r] of seen.entries()) expect(r.seq).toBe(BigInt(i + 1));
        await clientC.sendToSession({ sessionId, request: create(SessionRequestSchema, rq.cancelSession("done")) });
        downlink.abort();
      } finally {
        onA.close();
        for (const m of managers) m.abort();
      }
    });

    it("WatchTeam on C follows, live, a task whose workers run on A, and ends with it", { timeout: 60_000 }, async () => {
      const [a, , c] = nodes as [Cluster["nodes"][0], Cluster["nodes"][0], Cluster["nodes"][0]];
      const created = await fetch(`${a.url}/v1/tasks`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "team", workers: [{ prompt: script([[{ delay_ms: 1_500 }, { text: "slow" }]]) }, { prompt: says("quick") }] }),
      });
      expect(created.status).toBe(201);
      const taskId = ((await created.json()) as { id: string }).id;
      const watcher = watch(c.url, taskId);
      expect(await watcher.done).toBeUndefined();
      expectCompleteLog(watcher.events);
      expect(watcher.events.filter((e) => e.event.case === "workerCompleted")).toHaveLength(2);
    });

    it("a relayed client that goes away leaves the session resumable; a third node relays it again", { timeout: 60_000 }, async () => {
      const [a, b, c] = nodes as [Cluster["nodes"][0], Cluster["nodes"][0], Cluster["nodes"][0]];
      const factories = [a, b, c].map((n) => sessionClientFactory("grpc-js", n.url));
      try {
        const first = factories[0]!.open();
        const { sessionId } = await startSession(first);
        first.send(rq.user("one"));
        const turn1 = await readTurn(first);
        first.cancel();
        await first.status;
        const viaB = factories[1]!.open();
        viaB.send({ request: { case: "resume", value: { sessionId, afterSeq: turn1.at(-1)!.seq } } });
        viaB.send(rq.user("two"));
        const turn2 = await readTurn(viaB);
        expect(textOf(turn2)).toContain("You said: two");
        viaB.cancel();
        await viaB.status;
        const viaC = factories[2]!.open();
        viaC.send({ request: { case: "resume", value: { sessionId, afterSeq: 0n } } });
        const replayed = await readUntil(viaC, "sessionStarted").then(async (r) => [...r, ...(await readTurn(viaC)), ...(await readTurn(viaC))]);
        expect(textOf(replayed)).toContain("You said: one");
        expect(textOf(replayed)).toContain("You said: two");
        viaC.send(rq.cancelSession("done"));
        expect((await viaC.status).code).toBe(0);
      } finally {
        for (const f of factories) f.close();
      }
    });
  });
}
