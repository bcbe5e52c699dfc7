import type { SessionRegistry } from "../session/index.ts";
import type { NodeChannel } from "./channel.ts";

/**
 * Reaching the node that runs a session to act on it there. Today it carries one request: end
 * a live session (REST DELETE received by another node).
 */
export interface SessionRouting {
  /** Asks `ownerNode` to end the session; resolves once it has (or when `ownerNode` is this node). */
  endOnOwner(tenantId: string, sessionId: string, ownerNode: string, reason: string): Promise<void>;
  close(): void;
}

export function createSessionRouting(channel: NodeChannel, registry: Pick<SessionRegistry, "get" | "end">): SessionRouting {
  const served = channel.serve({
    "end-session": async ({ tenantId, sessionId, reason }) => {
      const live = registry.get(tenantId, sessionId);
      if (live) await registry.end(live, "cancelled", reason || "ended by another node");
      return {};
    },
  });
  return {
    async endOnOwner(tenantId, sessionId, ownerNode, reason) {
      if (ownerNode === channel.nodeId) return;
      await channel.ask(ownerNode, { kind: "end-session", tenantId, sessionId, reason });
    },
    close: () => served.close(),
  };
}
