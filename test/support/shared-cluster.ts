/**
 * One cluster topology (test/support/cluster.ts: two nodes behind HAProxy, NATS, PostgreSQL)
 * for every file of the cluster tier. That tier runs its files one after another in one worker
 * that keeps its modules (`isolate: false` in vitest.config.ts), so `clusterTest`'s worker
 * fixture starts the topology for the first file and stops it after the last.
 *
 * A file takes it with `acquire` (its own settings, if any, restart the nodes with them) and
 * hands it back with `release`, which leaves it as it was found: every node running with the
 * shared settings, UP in HAProxy, holding no session stream. A file that stops, kills or
 * restarts nodes or NATS may do so; `release` (or the next `acquire`) puts things back.
 */
import { setTimeout as delay } from "node:timers/promises";
import { test } from "vitest";
import { activeSessions, type Cluster, type ClusterPrerequisites, clusterPrerequisites, NO_RATE_LIMITS, relayedStreams, startCluster } from "./cluster.ts";

/** What every file of the tier can run with: no rate limits, no per-key stream cap, keepalives far apart. */
const SHARED_SETTINGS: Record<string, string> = { ...NO_RATE_LIMITS, ROZ_MAX_STREAMS_PER_KEY: "0", ROZ_KEEPALIVE_INTERVAL_MS: "60000" };

let prerequisites: Promise<ClusterPrerequisites | undefined> | undefined;

/** PostgreSQL, nats-server and haproxy, found (and NATS started) once per worker; undefined when missing (see `clusterPrerequisites`). */
export const sharedPrerequisites = (): Promise<ClusterPrerequisites | undefined> => (prerequisites ??= clusterPrerequisites());

/** `test` with the worker's topology as the `topology` fixture (undefined when a prerequisite is missing). */
export const clusterTest = test.extend<{ $worker: { topology: Cluster | undefined } }>({
  topology: [
    // biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from its destructuring pattern.
    async ({}, use) => {
      const pre = await sharedPrerequisites();
      if (pre === undefined) return use(undefined);
      const cluster = await startCluster(pre, { nodes: 2, env: SHARED_SETTINGS });
      try {
        await use(cluster);
      } finally {
        await cluster.close();
        await pre.stop();
        prerequisites = undefined;
      }
    },
    { scope: "worker" },
  ],
});

/** Whether no node holds a session stream (a previous file's streams are gone). */
async function quiet(cluster: Cluster): Promise<boolean> {
  const counts = await Promise.all(cluster.nodes.map(async (n) => [await activeSessions(n.url), await relayedStreams(n.url, "client")]));
  return counts.every(([active, relayed]) => active === 0 && relayed === 0);
}

/**
 * The topology for one file, with `settings` (beyond the shared ones) on every node: nodes
 * that run otherwise are restarted, and nodes still holding another file's streams after a
 * few seconds are restarted too.
 */
export async function acquire(topology: Cluster | undefined, settings: Record<string, string> = {}): Promise<Cluster> {
  if (topology === undefined) throw new Error("the cluster topology needs PostgreSQL, nats-server and haproxy");
  const own = Object.fromEntries(Object.entries(settings).filter(([name, value]) => SHARED_SETTINGS[name] !== value));
  await topology.configure(own);
  for (let i = 0; i < 50 && !(await quiet(topology)); i++) await delay(200);
  if (!(await quiet(topology))) {
    for (const node of topology.nodes) await node.stop();
    await topology.configure(own);
  }
  return topology;
}

/** Hands the topology back as `acquire` found it: every node running with the shared settings and UP in HAProxy. */
export async function release(topology: Cluster | undefined): Promise<void> {
  await topology?.configure({});
}
