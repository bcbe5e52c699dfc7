import type { FastifyBaseLogger } from "fastify";
import type { Store } from "../store/index.ts";
import type { Config } from "./config.ts";
import type { Lifecycle } from "./lifecycle.ts";
import { type NodeIdentity, stopDeadLocalNodes } from "./node-identity.ts";

export interface NodeHeartbeat {
  /** Runs `task` after each later heartbeat (one task: closing the tasks of stopped nodes). */
  afterEachBeat(task: () => Promise<void>): void;
}

/**
 * Writes this node's heartbeat now and then every `nodeHeartbeatMs`: it tells other processes
 * this one still runs its sessions. Before the first, the sessions an earlier run of this very
 * id left behind are handed to nobody. Each beat also sweeps the sessions nobody runs: nodes of
 * this host whose process is gone are marked stopped, live sessions of gone nodes become
 * `detached`, and those nobody came back for within the detach grace end as abandoned. At
 * shutdown the timer stops (a beat under way finishes first) and, once the live sessions are
 * stored, the node is marked stopped, so that the next process adopts them at once.
 */
export async function startNodeHeartbeat(
  store: Store,
  node: NodeIdentity,
  config: Pick<Config, "nodeHeartbeatMs" | "nodeExpiryMs" | "detachGraceMs">,
  log: FastifyBaseLogger,
  lifecycle: Lifecycle,
): Promise<NodeHeartbeat> {
  const beat = async (): Promise<void> => {
    const now = Date.now();
    await store.heartbeatNode(node.id, now, node.process);
    const stopped = await stopDeadLocalNodes(store, node);
    if (stopped.length > 0) log.info({ nodes: stopped }, "nodes of this host whose process is gone are stopped");
    const swept = await store.sweepOrphanedSessions({ aliveSince: now - config.nodeExpiryMs, idleBefore: now - config.detachGraceMs }, now);
    if (swept.detached > 0) log.info({ sessions: swept.detached }, "sessions whose node is gone are detached");
    if (swept.ended > 0) log.warn({ sessions: swept.ended }, "ended sessions whose node stopped and that nobody re-attached to");
  };
  const released = await store.releaseNodeSessions(node.id);
  if (released > 0) log.info({ sessions: released }, "sessions of this node's earlier run are detached");
  await beat();
  let afterBeat: (() => Promise<void>) | undefined;
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= beat()
      .then(() => afterBeat?.())
      .catch((err: unknown) => log.warn({ err }, "could not write the node heartbeat"))
      .finally(() => {
        running = undefined;
      });
  }, config.nodeHeartbeatMs);
  timer.unref();
  lifecycle.onClose("node heartbeat", async () => {
    clearInterval(timer);
    // A late beat would clear the stop mark written below.
    await running;
  });
  lifecycle.onClose("node registration", () => store.stopNode(node.id).catch((err: unknown) => log.warn({ err }, "could not mark the node stopped")));
  return {
    afterEachBeat: (task) => {
      afterBeat = task;
    },
  };
}
