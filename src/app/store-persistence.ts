import { toBinary } from "@bufbuild/protobuf";
import type { TurnRecord } from "../agent/index.ts";
import { SessionResponseSchema } from "../gen/roz/v1/agent_pb.js";
import { responseToWire } from "../rpc/index.ts";
import type { SequencedEvent, SessionEnvironment, SessionPersistence, SessionStatus } from "../session/index.ts";
import type { Environment, Store } from "../store/index.ts";

const toSessionEnvironment = (env: Environment): SessionEnvironment => ({
  id: env.id,
  permissionRules: env.permissions,
  ...(env.defaultModel ? { defaultModel: env.defaultModel } : {}),
  ...(env.instructions ? { instructions: env.instructions } : {}),
});

/** Events are logged as the exact `SessionResponse` bytes a resumed client will receive. */
const toStoredEvents = (events: SequencedEvent[]) =>
  events.map((e) => ({ seq: e.seq, payload: toBinary(SessionResponseSchema, responseToWire(e)) }));

/**
 * The session layer's persistence port over the Store. `observe` times every call
 * (store latency metric).
 */
export function storePersistence(
  store: Store,
  nodeId: string | undefined,
  observe: <T>(op: string, run: () => Promise<T>) => Promise<T> = (_op, run) => run(),
): SessionPersistence {
  return {
    resolveEnvironment: (tenantId, environmentId) =>
      observe("resolve_environment", async () => {
        if (environmentId !== "") {
          const env = await store.getEnvironment(tenantId, environmentId);
          return env && toSessionEnvironment(env);
        }
        const env = await store.findDefaultEnvironment(tenantId);
        return env ? toSessionEnvironment(env) : { id: "", permissionRules: [] };
      }),
    createSession: (s) =>
      observe("create_session", async () => {
        // Created only now that the start is accepted. Should another default appear meanwhile
        // (REST), the session is stored under it; its rules apply from the next session on.
        const environmentId = s.environmentId === "" ? (await store.getDefaultEnvironment(s.tenantId)).id : s.environmentId;
        await store.createSession(s.tenantId, {
          id: s.id,
          environmentId,
          model: s.model,
          ...(nodeId ? { nodeId } : {}),
          ...(s.hostId ? { hostId: s.hostId } : {}),
        });
      }),
    appendTurn: (tenantId, sessionId, record: TurnRecord, events) =>
      observe("append_turn", async () => {
        await store.appendTurn(tenantId, sessionId, record, toStoredEvents(events));
      }),
    appendEvents: (tenantId, sessionId, events) =>
      observe("append_events", async () => {
        await store.appendEvents(tenantId, sessionId, toStoredEvents(events));
      }),
    setStatus: (tenantId, sessionId, status: SessionStatus) =>
      observe("set_status", async () => {
        // A late detach/re-attach must never reopen a session that already ended.
        const live = status === "active" || status === "detached";
        await store.updateSessionStatus(tenantId, sessionId, { status, ...(live ? { from: ["active", "detached"] as const } : {}) });
      }),
    putFeedback: (tenantId, sessionId, messageId, rating) =>
      observe("put_feedback", async () => {
        await store.putFeedback(tenantId, { sessionId, messageId, rating });
      }),
  };
}
