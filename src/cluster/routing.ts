import { RozError } from "../errors/index.ts";
import type { Principal, RollbackResult, SessionRegistry } from "../session/index.ts";
import type { NodeChannel } from "./channel.ts";

/**
 * Reaching the node that runs a session to act on it there: end a live session (REST DELETE
 * received by another node), or roll back its last turns (REST rollback received elsewhere).
 */
export interface SessionRouting {
  /** Asks `ownerNode` to end the session; resolves once it has (or when `ownerNode` is this node). */
  endOnOwner(tenantId: string, sessionId: string, ownerNode: string, reason: string): Promise<void>;
  /** Asks `ownerNode` to roll back the session's last `turns` turns; rejects with its refusal (`unavailable` when it no longer runs it). */
  rollbackOnOwner(principal: Principal, sessionId: string, ownerNode: string, turns: number): Promise<RollbackResult>;
  close(): void;
}

export function createSessionRouting(channel: NodeChannel, registry: Pick<SessionRegistry, "get" | "end">): SessionRouting {
  const served = channel.serve({
    "end-session": async ({ tenantId, sessionId, reason }) => {
      const live = registry.get(tenantId, sessionId);
      if (live) await registry.end(live, "cancelled", reason || "ended by another node");
      return {};
    },
    rollback: async ({ principal, sessionId, turns }) => {
      const live = registry.get(principal.tenantId, sessionId);
      if (!live) throw new RozError("unavailable", "the session is no longer running on this node; retry");
      return live.rollback(turns);
    },
  });
  return {
    async endOnOwner(tenantId, sessionId, ownerNode, reason) {
      if (ownerNode === channel.nodeId) return;
      await channel.ask(ownerNode, { kind: "end-session", tenantId, sessionId, reason });
    },
    rollbackOnOwner: (principal, sessionId, ownerNode, turns) => channel.ask(ownerNode, { kind: "rollback", principal, sessionId, turns }),
    close: () => served.close(),
  };
}
