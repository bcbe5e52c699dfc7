import type { TurnRecord } from "../agent/index.ts";
import type { SessionEnvironment, SessionPersistence, SessionStatus } from "./ports.ts";
import type { LoggedEvent } from "./types.ts";
import type { Environment, Store } from "../store/index.ts";

const toSessionEnvironment = (env: Environment): SessionEnvironment => ({
  id: env.id,
  permissionRules: env.permissions,
  ...(env.defaultModel ? { defaultModel: env.defaultModel } : {}),
  ...(env.instructions ? { instructions: env.instructions } : {}),
  ...(env.teamsEnabled !== undefined ? { teams: env.teamsEnabled } : {}),
});

/** Events are logged as the exact `SessionResponse` bytes (encoded once, by the session) a resumed client receives. */
const toStoredEvents = (events: LoggedEvent[]) => events.map((e) => ({ seq: e.seq, payload: e.bytes }));

/**
 * The session layer's persistence port over the Store. `observe` times every call
 * (store latency metric).
 */
export function storePersistence(
  store: Store,
  node: {
    id: string;
    expiryMs: number;
    /** Whether node `nodeId`, whose heartbeat has not expired yet, is known to be dead all the same. */
    isGone?: (nodeId: string) => Promise<boolean>;
  },
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
          nodeId: node.id,
          ...(s.hostId ? { hostId: s.hostId } : {}),
          ...(s.title !== undefined ? { title: s.title } : {}),
          ...(s.metadata !== undefined ? { metadata: s.metadata } : {}),
          ...(s.budget !== undefined ? { budget: s.budget } : {}),
        });
      }),
    appendTurn: (tenantId, sessionId, record: TurnRecord, events, state) =>
      observe("append_turn", async () => {
        await store.appendTurn(tenantId, sessionId, record, toStoredEvents(events), state);
      }),
    readEvents: (tenantId, sessionId, afterSeq, limit) =>
      observe("read_events", async () => {
        const prunedThrough = await store.eventsPrunedThrough(tenantId, sessionId);
        if (prunedThrough === undefined) return undefined;
        const events = (await store.readEvents(tenantId, sessionId, { afterSeq, limit })) ?? [];
        return { prunedThrough, events: events.map((e) => ({ seq: e.seq, bytes: e.payload })) };
      }),
    findSession: (tenantId, sessionId) =>
      observe("find_session", async () => {
        const s = await store.getResumableSession(tenantId, sessionId, Date.now() - node.expiryMs);
        if (!s) return undefined;
        // This process's own sessions from an earlier run with the same node id are no one's.
        const ownerAlive = s.ownerAlive && s.nodeId !== undefined && s.nodeId !== node.id && !(await node.isGone?.(s.nodeId));
        return {
          status: s.status,
          lastSeq: s.lastEventSeq,
          ownerAlive,
          environmentId: s.environmentId,
          turnCount: s.turnCount,
          ...(s.nodeId !== undefined ? { nodeId: s.nodeId } : {}),
          ...(s.state !== undefined ? { state: s.state } : {}),
        };
      }),
    saveState: (tenantId, sessionId, state) =>
      observe("save_state", async () => {
        await store.saveSessionState(tenantId, sessionId, state);
      }),
    readMessages: (tenantId, sessionId) => observe("read_messages", () => store.listSessionMessages(tenantId, sessionId)),
    adoptSession: (tenantId, sessionId, fromNode) => observe("adopt_session", () => store.adoptSession(tenantId, sessionId, { fromNode, toNode: node.id })),
    appendEvents: (tenantId, sessionId, events) =>
      observe("append_events", async () => {
        await store.appendEvents(tenantId, sessionId, toStoredEvents(events));
      }),
    setStatus: (tenantId, sessionId, status: SessionStatus, endReason) =>
      observe("set_status", async () => {
        // A late detach/re-attach must never reopen a session that already ended.
        const live = status === "active" || status === "detached";
        await store.updateSessionStatus(tenantId, sessionId, {
          status,
          ...(live ? { from: ["active", "detached"] as const } : {}),
          ...(endReason ? { endReason } : {}),
        });
      }),
    listTurns: (tenantId, sessionId) => observe("list_turns", () => store.listTurns(tenantId, sessionId)),
    rollBackTurns: (tenantId, sessionId, turns, state) =>
      observe("roll_back_turns", async () => {
        await store.rollBackTurns(tenantId, sessionId, turns, state);
      }),
    forkSession: (s, turns, state) =>
      observe("fork_session", async () => {
        await store.forkSession(
          s.tenantId,
          {
            id: s.id,
            environmentId: s.environmentId,
            model: s.model,
            nodeId: node.id,
            ...(s.status ? { status: s.status } : {}),
            ...(s.title !== undefined ? { title: s.title } : {}),
            ...(s.metadata !== undefined ? { metadata: s.metadata } : {}),
            ...(s.budget !== undefined ? { budget: s.budget } : {}),
          },
          turns,
          state,
        );
      }),
    putFeedback: (tenantId, sessionId, messageId, rating) =>
      observe("put_feedback", async () => {
        await store.putFeedback(tenantId, { sessionId, messageId, rating });
      }),
  };
}
