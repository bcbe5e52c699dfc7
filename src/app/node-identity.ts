import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { NodeProcess, RunningNode, Store } from "../store/index.ts";
import type { Config } from "./config.ts";

/**
 * Who this process is among the store's nodes. A set `ROZ_NODE_ID` is taken as is (and, on any
 * host, only its heartbeat can tell whether it still runs). Otherwise the id is
 * `hostname-pid-random`, random per process start: in a container every process is pid 1 and
 * a restarted container keeps its hostname, so `hostname-pid` alone would repeat. Such an id's
 * host and pid are recorded with the node.
 */
export interface NodeIdentity {
  readonly id: string;
  /** Recorded with the node when the id is generated; undefined for a set `ROZ_NODE_ID`. */
  readonly process: NodeProcess | undefined;
}

export function nodeIdentityOf(config: Pick<Config, "nodeId">): NodeIdentity {
  if (config.nodeId !== undefined) return { id: config.nodeId, process: undefined };
  const process = { host: hostname(), pid: globalThis.process.pid };
  return { id: `${process.host}-${process.pid}-${randomBytes(4).toString("hex")}`, process };
}

/**
 * Whether `node` (recorded with its process, not stopped) is certainly dead: it runs on this
 * host and its process is gone, or it is this very process under an older id (an earlier app of
 * the same process, or a restarted container's pid 1).
 */
export function processGone(node: RunningNode, self: NodeIdentity): boolean {
  if (node.host !== hostname() || node.id === self.id) return false;
  if (node.pid === process.pid) return true;
  try {
    process.kill(node.pid, 0);
    return false;
  } catch (err) {
    // EPERM: the process exists (another user's); only ESRCH says it is gone.
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/**
 * Marks stopped (as of their last heartbeat) the nodes of this host whose process is gone, so
 * that the store treats them as dead at once. Returns the ids it marked.
 */
export async function stopDeadLocalNodes(store: Pick<Store, "runningNodesOn" | "stopNode">, self: NodeIdentity): Promise<string[]> {
  const dead = (await store.runningNodesOn(hostname())).filter((node) => processGone(node, self));
  for (const node of dead) await store.stopNode(node.id, node.heartbeatAt);
  return dead.map((node) => node.id);
}
