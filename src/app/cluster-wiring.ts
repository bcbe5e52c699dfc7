import type { FastifyBaseLogger } from "fastify";
import type { EventBus } from "../bus/index.ts";
import { createNodeChannel, createSessionRelay, createSessionRouting, type SessionRelay, type SessionRouting } from "../cluster/index.ts";
import { relayHostCalls } from "../rpc/index.ts";
import { SessionStream } from "../session/index.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Metrics } from "./metrics.ts";
import type { Sessions } from "./sessions-setup.ts";

/** How this node reaches the sessions other nodes run; both absent on the in-memory bus (no other nodes). */
export interface ClusterWiring {
  /** Ends a live session on the node that runs it (REST DELETE received by another node). */
  readonly routing?: SessionRouting;
  /** Relays the streams of sessions another node owns. */
  readonly relay?: SessionRelay;
}

/** Routing and relay over a networked bus; they stop taking requests first at shutdown, and the relay closes after the streams. */
export function wireCluster(bus: EventBus, nodeId: string, sessions: Sessions, metrics: Metrics, log: FastifyBaseLogger, lifecycle: Lifecycle): ClusterWiring {
  // Only a networked bus has other nodes to route to.
  if (bus.kind === "memory") return {};
  const { deps, registry, directory, openStreams } = sessions;
  const channel = createNodeChannel(bus, nodeId);
  const routing = createSessionRouting(channel, registry);
  lifecycle.onClose("session routing", () => routing.close());
  // Streams of sessions another node owns are relayed over a networked bus.
  const relay = createSessionRelay(channel);
  metrics.observeRelay(relay);
  relay.host({
    openStream: (principal) => new SessionStream(deps, registry, directory, principal),
    ...relayHostCalls({ directory }),
    track: (stream, open) => {
      if (open) openStreams.add(stream);
      else openStreams.delete(stream);
    },
    draining: () => lifecycle.closing,
    log,
  });
  lifecycle.onClose("relay hosting", () => relay.shutdown());
  lifecycle.onClose("relay", () => relay.close());
  return { routing, relay };
}
