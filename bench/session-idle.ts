/**
 * Idle sessions: the server child's resident memory per started,
 * turn-less session, read from /proc/<pid>/status after a full GC, minus the same reading
 * taken after a warm-up with no session open.
 */
import { type AgentClient, connectClients, finish, startSession } from "./client.ts";
import { startServerProcess } from "./server-process.ts";
import { mapLimit, sleep } from "./support.ts";

export interface IdleMemory {
  sessions: number;
  connections: number;
  /** RSS growth per session, bytes. */
  rssPerSession: number;
  /** V8 heap growth per session, bytes. */
  heapPerSession: number;
}

async function settledReading(server: Awaited<ReturnType<typeof startServerProcess>>): Promise<{ rss: number; heap: number }> {
  await server.gc();
  await sleep(500);
  await server.gc();
  return { rss: await server.rss(), heap: (await server.stats()).heapUsed };
}

/** Opens `sessions` idle sessions spread evenly over `connections` HTTP/2 connections of a fresh server. */
export async function idleMemory(sessions: number, connections: number): Promise<IdleMemory> {
  // Keepalives at their default interval: an idle session in production has that timer too.
  const server = await startServerProcess({ kind: "roz", env: { ROZ_KEEPALIVE_INTERVAL_MS: "15000" } });
  const conn = connectClients(server.url, connections);
  try {
    // Warm-up: load every code path a session touches, then close those sessions again.
    const warm = await mapLimit(20, 20, (i) => startSession(conn.clients[i % connections] as AgentClient));
    await Promise.all(warm.map((s) => finish(s.stream)));
    const before = await settledReading(server);
    const open = await mapLimit(sessions, 100, (i) => startSession(conn.clients[i % connections] as AgentClient));
    const after = await settledReading(server);
    await mapLimit(open.length, 200, (i) => finish((open[i] as (typeof open)[number]).stream));
    return {
      sessions,
      connections,
      rssPerSession: (after.rss - before.rss) / sessions,
      heapPerSession: (after.heap - before.heap) / sessions,
    };
  } finally {
    conn.close();
    await server.close();
  }
}
