import type { FastifyBaseLogger } from "fastify";
import type { Store } from "../store/index.ts";
import type { Config } from "./config.ts";
import type { Lifecycle } from "./lifecycle.ts";

export interface NodeHeartbeat {
  /** Runs `task` after each later heartbeat (one task: closing the tasks of stopped nodes). */
  afterEachBeat(task: () => Promise<void>): void;
}

/**
 * Writes this node's heartbeat now and then every `nodeHeartbeatMs`: it tells other processes
 * this one still runs its sessions. Sessions of nodes that stopped heart-beating stay resumable
 * (adopted on re-attach) until nobody came back for them within the detach grace; each beat
 * ends those. At shutdown the timer stops and the node is marked stopped.
 */
export async function startNodeHeartbeat(
  store: Store,
  nodeId: string,
  config: Pick<Config, "nodeHeartbeatMs" | "nodeExpiryMs" | "detachGraceMs">,
  log: FastifyBaseLogger,
  lifecycle: Lifecycle,
): Promise<NodeHeartbeat> {
  const beat = async (): Promise<void> => {
    const now = Date.now();
    await store.heartbeatNode(nodeId, now);
    const abandoned = await store.endAbandonedSessions({ aliveSince: now - config.nodeExpiryMs, idleBefore: now - config.detachGraceMs }, now);
    if (abandoned > 0) log.warn({ sessions: abandoned }, "ended sessions whose node stopped and that nobody re-attached to");
  };
  await beat();
  let afterBeat: (() => Promise<void>) | undefined;
  const timer = setInterval(() => {
    beat()
      .then(() => afterBeat?.())
      .catch((err: unknown) => log.warn({ err }, "could not write the node heartbeat"));
  }, config.nodeHeartbeatMs);
  timer.unref();
  lifecycle.onClose("node heartbeat", () => clearInterval(timer));
  lifecycle.onClose("node registration", () => store.stopNode(nodeId).catch((err: unknown) => log.warn({ err }, "could not mark the node stopped")));
  return {
    afterEachBeat: (task) => {
      afterBeat = task;
    },
  };
}
