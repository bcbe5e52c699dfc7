/**
 * Sessions nobody runs (session-behaviour.md §6 "Restarts", "Sessions nobody runs"): the real
 * CLI as child processes on one store. A process that died on this host (SIGKILL) or stopped
 * (SIGTERM) leaves its sessions to the next process at once; a node with a set ROZ_NODE_ID is
 * waited for (SessionError{unavailable} + UNAVAILABLE meanwhile); a session nobody re-attaches
 * shows `detached` in REST, then ends `cancelled` / `abandoned` after ROZ_DETACH_GRACE_MS with
 * its transcript kept.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentService, SessionRequestSchema } from "../../../src/gen/roz/v1/agent_pb.js";
import { request } from "../../rest/support.ts";
import type { SpawnedServer } from "../../support/server.ts";
import type { SessionClient } from "../../support/session-client.ts";
import { caseOf, readTurn, responseValue, rq, startSession, textOf, turnCompleteOf } from "../../support/session-protocol.ts";
import type { DurabilityBackend } from "./backend.ts";
import { SuiteProcesses } from "./suite-processes.ts";

/** Long enough that only a dead-at-once rule can explain an adoption within a few seconds. */
const EXPIRY_MS = 20_000;
const GRACE_MS = 3_000;

export function defineOrphanSuite(name: string, makeBackend: () => Promise<DurabilityBackend>): void {
  describe(`sessions nobody runs: ${name}`, () => {
    let backend: DurabilityBackend | undefined;
    const processes = new SuiteProcesses();
    const spawn = (env: Record<string, string> = {}): Promise<SpawnedServer> =>
      processes.spawn({
        ...backend!.env,
        ROZ_KEEPALIVE_INTERVAL_MS: "3600000",
        ROZ_NODE_HEARTBEAT_MS: "200",
        ROZ_NODE_EXPIRY_MS: String(EXPIRY_MS),
        ROZ_DETACH_GRACE_MS: String(GRACE_MS),
        ...env,
      });
    const open = (url: string): SessionClient => processes.open(url);
    /** A session with one answered turn; returns its id and the last seq its client saw. */
    const conversation = async (url: string): Promise<{ sessionId: string; seen: bigint; client: SessionClient }> => {
      const client = open(url);
      const { sessionId } = await startSession(client, { model: "scripted/default" });
      client.send(rq.user("remember me", { messageId: "m1" }));
      expect(textOf(await readTurn(client))).toContain("You said: remember me");
      return { sessionId, seen: client.responses.seen.at(-1)!.seq, client };
    };
    /** One re-attach attempt: the first response after `resume` + `ping`, and the client. */
    const resumeOnce = async (url: string, sessionId: string, afterSeq: bigint) => {
      const client = open(url);
      client.send({ request: { case: "resume", value: { sessionId, afterSeq } } });
      client.send(rq.ping());
      const first = await client.responses.nextMatching((r) => caseOf(r) !== "keepalive", 10_000);
      return { client, first };
    };
    const restOf = async (url: string, sessionId: string) => (await request(url, "GET", `/v1/sessions/${sessionId}`)).json;

    beforeAll(async () => {
      backend = await makeBackend();
    });
    afterAll(async () => {
      await processes.dispose();
      await backend?.dispose();
    });

    it.each(["SIGKILL", "SIGTERM"] as const)(
      "after a %s and a restart on the same data the first re-attach is adopted at once, history intact",
      async (signal) => {
        // However slowly the next process starts, the session must not be abandoned meanwhile.
        const env = { ROZ_DETACH_GRACE_MS: "600000" };
        const first = await spawn(env);
        const { sessionId, seen } = await conversation(first.url);
        const exit = await first.stop(signal);
        expect(signal === "SIGKILL" ? exit.signal : exit.code).toBe(signal === "SIGKILL" ? "SIGKILL" : 0);

        const second = await spawn(env);
        const startedAt = Date.now();
        const { client, first: answer } = await resumeOnce(second.url, sessionId, seen);
        expect(caseOf(answer), JSON.stringify(answer.response.value)).toBe("pong");
        expect(Date.now() - startedAt).toBeLessThan(EXPIRY_MS / 4);
        client.send(rq.user("still there?", { messageId: "m2" }));
        expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
        const turns = (await request(second.url, "GET", `/v1/sessions/${sessionId}/messages?format=turns`)).json.turns as { message_id: string }[];
        expect(turns.map((t) => t.message_id)).toEqual(["m1", "m2"]);
        expect(await restOf(second.url, sessionId)).toMatchObject({ status: "active", attached_streams: 1 });
        client.end();
        expect((await client.status).code).toBe(0);
        expect(await restOf(second.url, sessionId)).toMatchObject({ status: "completed", end_reason: "completed" });
        expect((await second.stop("SIGTERM")).code).toBe(0);
      },
      90_000,
    );

    it("a node with a set ROZ_NODE_ID is waited for: re-attach gets SessionError{unavailable} + UNAVAILABLE, SendToSession UNAVAILABLE", async () => {
      const expiryMs = 5_000;
      // Adoption, not the end of an abandoned session, must follow the expiry.
      const env = { ROZ_NODE_EXPIRY_MS: String(expiryMs), ROZ_DETACH_GRACE_MS: "600000" };
      const first = await spawn({ ...env, ROZ_NODE_ID: "orphans-named-a" });
      const second = await spawn({ ...env, ROZ_NODE_ID: "orphans-named-b" });
      const { sessionId, seen } = await conversation(first.url);
      await first.stop("SIGKILL");
      const killedAt = Date.now();

      const { client, first: answer } = await resumeOnce(second.url, sessionId, seen);
      expect(caseOf(answer)).toBe("error");
      expect(responseValue(answer, "error")).toMatchObject({ code: "unavailable", retryable: true });
      expect((await client.status).code).toBe(Code.Unavailable);
      const web = createClient(AgentService, createConnectTransport({ baseUrl: second.url, httpVersion: "1.1" }));
      const sent = await web.sendToSession({ sessionId, request: create(SessionRequestSchema, rq.ping()) }).catch((err: unknown) => ConnectError.from(err));
      expect(sent).toBeInstanceOf(ConnectError);
      expect((sent as ConnectError).code).toBe(Code.Unavailable);
      // Both answers came while the dead node's heartbeat was still fresh.
      expect(Date.now() - killedAt).toBeLessThan(expiryMs - 1_000);

      // Once its heartbeat has expired, the session is adopted.
      let adopted: SessionClient | undefined;
      while (adopted === undefined && Date.now() - killedAt < expiryMs + 15_000) {
        const attempt = await resumeOnce(second.url, sessionId, seen);
        if (caseOf(attempt.first) === "pong") adopted = attempt.client;
        else {
          expect(responseValue(attempt.first, "error")).toMatchObject({ code: "unavailable", retryable: true });
          await delay(250);
        }
      }
      expect(adopted).toBeDefined();
      expect(Date.now() - killedAt).toBeGreaterThanOrEqual(expiryMs - 1_000);
      adopted!.send(rq.cancelSession("done"));
      expect((await adopted!.status).code).toBe(0);
      expect(await restOf(second.url, sessionId)).toMatchObject({ status: "cancelled", end_reason: "client" });
      expect((await second.stop("SIGTERM")).code).toBe(0);
    }, 90_000);

    it("a session orphaned by a crash and never re-attached shows detached, then ends cancelled / abandoned after the grace", async () => {
      const first = await spawn();
      // Running already, so that its start-up time does not eat into the grace.
      const second = await spawn();
      const { sessionId } = await conversation(first.url);
      // Another process of this host that runs: waited for.
      expect((await restOf(second.url, sessionId)).status).toBe("active");
      await first.stop("SIGKILL");
      const killedAt = Date.now();

      // Its process is gone: the other process's next sweep says so at once.
      await expect.poll(async () => (await restOf(second.url, sessionId)).status, { timeout: 3_000, interval: 50 }).toBe("detached");
      expect(Date.now() - killedAt).toBeLessThan(EXPIRY_MS / 4);
      const statuses = new Set<string>();
      let ended: Record<string, unknown> | undefined;
      while (ended === undefined && Date.now() - killedAt < GRACE_MS + 10_000) {
        const session = await restOf(second.url, sessionId);
        if (session.status === "cancelled") ended = session;
        else statuses.add(session.status);
        await delay(200);
      }
      expect([...statuses]).toEqual(["detached"]);
      expect(ended).toMatchObject({ status: "cancelled", end_reason: "abandoned" });
      // The grace counts from the dead process's last heartbeat (at most one heartbeat before the kill).
      expect(Date.parse(String(ended!["ended_at"])) - killedAt).toBeGreaterThanOrEqual(GRACE_MS - 1_000);
      const active = (await request(second.url, "GET", "/v1/sessions?status=active")).json.items as { id: string }[];
      expect(active.map((s) => s.id)).not.toContain(sessionId);
      const turns = (await request(second.url, "GET", `/v1/sessions/${sessionId}/messages?format=turns`)).json.turns as { message_id: string }[];
      expect(turns.map((t) => t.message_id)).toEqual(["m1"]);

      // A session detached from a live process ends the same way, by that process's own timer.
      const { sessionId: live, client } = await conversation(second.url);
      client.cancel();
      await expect.poll(async () => (await restOf(second.url, live)).status, { timeout: 5_000 }).toBe("detached");
      await expect.poll(async () => (await restOf(second.url, live)).end_reason, { timeout: GRACE_MS + 10_000, interval: 200 }).toBe("abandoned");
      expect((await restOf(second.url, live)).status).toBe("cancelled");
      expect((await second.stop("SIGTERM")).code).toBe(0);
    }, 90_000);
  });
}
