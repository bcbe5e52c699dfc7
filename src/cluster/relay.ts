import type { Principal } from "../session/index.ts";
import type { NodeChannel } from "./channel.ts";
import { type ClientRelay, RelayClients } from "./relay-client.ts";
import { type RelayHost, RelayHosting } from "./relay-host.ts";

/**
 * Session streams served by one node for a session another node owns (session-behaviour.md
 * §10), over the node channel: this node's clients relayed to owners, and streams this node
 * hosts for other nodes' clients. Requests and responses travel as protobuf bytes.
 */
export interface SessionRelay {
  /** Opens a relayed stream on `ownerNode`, resuming `sessionId` after `afterSeq`. */
  open(ownerNode: string, principal: Principal, sessionId: string, afterSeq: number, format: string): Promise<ClientRelay>;
  /**
   * Delivers one request to a session `ownerNode` runs (SendToSession received here); resolves
   * with the session's last seq when it was accepted, as the owner's SendToSession would.
   */
  deliver(ownerNode: string, principal: Principal, sessionId: string, request: Uint8Array): Promise<number>;
  /** Serves this node's side: hosting streams for other nodes' clients. */
  host(host: RelayHost): void;
  /** Relayed streams this node serves to its clients, and hosts for other nodes (metrics). */
  readonly relayedStreams: number;
  readonly hostedStreams: number;
  /** True once `shutdown()` ran: this node's clients are going elsewhere, nothing is moved here. */
  readonly shuttingDown: boolean;
  /** Ends every relayed stream of this node's clients with `shutting_down`. */
  shutdown(): void;
  close(): void;
}

export function createSessionRelay(channel: NodeChannel): SessionRelay {
  const clients = new RelayClients(channel);
  let hosting: RelayHosting | undefined;
  return {
    open: (ownerNode, principal, sessionId, afterSeq, format) => clients.open(ownerNode, principal, sessionId, afterSeq, format),
    deliver: (ownerNode, principal, sessionId, request) => clients.deliver(ownerNode, principal, sessionId, request),
    host(host) {
      hosting = new RelayHosting(channel, host);
    },
    get relayedStreams() {
      return clients.size;
    },
    get hostedStreams() {
      return hosting?.size ?? 0;
    },
    get shuttingDown() {
      return clients.shuttingDown;
    },
    shutdown: () => clients.shutdown(),
    close() {
      clients.close();
      hosting?.close();
    },
  };
}
