import type { EventBus } from "../bus/index.ts";
import { RozError } from "../errors/index.ts";
import type { SessionRegistry } from "../session/index.ts";

/**
 * Reaching the node that runs a session, over the bus's request/reply: each node serves
 * `node.<its id>.sessions`. Today it carries one request: end a live session (REST DELETE
 * received by another node). Routing facts travel in headers; the bodies are empty.
 */
export interface SessionRouting {
  /** Asks `ownerNode` to end the session; resolves once it has (or when `ownerNode` is this node). */
  endOnOwner(tenantId: string, sessionId: string, ownerNode: string, reason: string): Promise<void>;
  close(): void;
}

const EMPTY = new Uint8Array(0);
const OP = "Roz-Op";
const TENANT = "Roz-Tenant";
const SESSION = "Roz-Session";
const REASON = "Roz-Reason";

/** A node id as one subject token. */
const subjectOf = (nodeId: string): string => `node.${nodeId.replace(/[^A-Za-z0-9_-]/g, "_")}.sessions`;

export function createSessionRouting(bus: EventBus, nodeId: string, registry: Pick<SessionRegistry, "get" | "end">): SessionRouting {
  const responder = bus.serve(subjectOf(nodeId), async (_data, headers) => {
    const tenantId = headers[TENANT];
    const sessionId = headers[SESSION];
    if (headers[OP] !== "end" || !tenantId || !sessionId) throw new RozError("invalid_argument", `unknown session routing request "${headers[OP]}"`);
    const live = registry.get(tenantId, sessionId);
    if (live) await registry.end(live, "cancelled", headers[REASON] || "ended by another node");
    return EMPTY;
  });
  return {
    async endOnOwner(tenantId, sessionId, ownerNode, reason) {
      if (ownerNode === nodeId) return;
      await bus.request(subjectOf(ownerNode), EMPTY, { headers: { [OP]: "end", [TENANT]: tenantId, [SESSION]: sessionId, [REASON]: reason } });
    },
    close: () => responder.close(),
  };
}
