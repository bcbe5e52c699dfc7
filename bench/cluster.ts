/**
 * Section "cluster": roz nodes (the real CLI) on one PostgreSQL and one nats-server behind
 * HAProxy running deploy/haproxy.cfg, all on loopback (test/support/cluster.ts); the load
 * generator in children of its own (load-child.ts), as in section `scale`.
 * (1) Capacity: the paced load of `scale` (sessions streaming 100 timestamped deltas/s)
 *     through HAProxy, swept upward until the added latency per delta (p99 of per-delta
 *     differences against the same load read from the fake directly) reaches 5 ms: one
 *     node against two nodes, the same topology otherwise. The ratio of the largest loads
 *     under 5 ms says how far a second node carries.
 * (2) Re-attach after kill -9 of the owning node: sessions held through HAProxy, idle and
 *     mid-turn; the owner is killed, each client re-attaches through HAProxy with `resume`,
 *     and the time from the kill to the first response of the re-attached stream is taken.
 */
import { readFileSync } from "node:fs";
import pg from "pg";
import { type Cluster, type ClusterPrerequisites, clusterPrerequisites, startCluster } from "../test/support/cluster.ts";
import type { Reattached } from "./held-sessions.ts";
import type { Contender } from "./load-child.ts";
import { type Load, type LoadRig, overRounds, pairedDifferences, pooled, RATE, rotated, runLoad, spread, startClients, startFake } from "./paced-load.ts";
import { benchServerDefaults } from "./server-process.ts";
import { BENCH_MODEL } from "./session-deltas.ts";
import { type BenchOptions, fmt, monoMs, ms, pick, progress, ratio, type Row, sleep, summarize } from "./support.ts";

const ADDED_P99_TARGET_MS = 5;
const RATIO_TARGET = 1.7;
/** Client connections to HAProxy at most: the loopback config's maxconn is 256. */
const MAX_CONNECTIONS = 100;
const HEARTBEAT_MS = 250;
const EXPIRY_MS = 1000;

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/** CPU seconds (user + system) of a process, from /proc/<pid>/stat. */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
  } catch {
    return 0;
  }
}

/** The machine's busy and total CPU time (all cores), from /proc/stat. */
function machineCpu(): { busy: number; total: number } {
  const values = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  const total = values.slice(0, 8).reduce((s, v) => s + v, 0);
  const idle = (values[3] ?? 0) + (values[4] ?? 0);
  return { busy: total - idle, total };
}

/**
 * A node's event-loop delay p99 since the previous scrape, ms (prom-client resets its
 * histogram at each scrape of /metrics).
 */
async function loopP99Ms(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^roz_nodejs_eventloop_lag_p99_seconds (\S+)/m.exec(text)?.[1]) * 1000;
}

interface Sample {
  nodes: number[];
  machine: { busy: number; total: number };
  loopP99Ms: number[];
}

const sample = (cluster: Cluster) => async (): Promise<Sample> => ({
  nodes: cluster.nodes.map((n) => cpuSeconds(n.process?.child.pid)),
  machine: machineCpu(),
  loopP99Ms: await Promise.all(cluster.nodes.map((n) => loopP99Ms(n.url))),
});

interface ClusterRound {
  added: { p50: number; p99: number; pairs: number };
  oursP99: number;
  directP99: number;
  /** Cores used by each node while ours streamed. */
  nodeCores: number[];
  /** CPU of all nodes per delta streamed, µs. */
  cpuUsPerDelta: number;
  /** Share of the machine's CPU busy (all processes) while ours streamed. */
  machineBusy: number;
  /** The highest event-loop delay p99 of the nodes while ours streamed, ms. */
  nodeLoopP99Ms: number;
  loadLoopP99Ms: number;
}

interface ClusterPoint {
  nodes: number;
  sessions: number;
  rounds: ClusterRound[];
}

const CONTENDERS: Contender[] = ["ours", "direct"];

async function clusterRound(rig: LoadRig, cluster: Cluster, load: Load, index: number): Promise<ClusterRound> {
  const results: Partial<Record<Contender, Awaited<ReturnType<typeof runLoad<Sample>>>>> = {};
  for (const contender of rotated(CONTENDERS, index)) results[contender] = await runLoad(rig, load, contender, cluster.url, sample(cluster));
  const o = results.ours!;
  const d = results.direct!;
  const diffs = summarize(pairedDifferences(o.run.latencies, d.run.latencies, load.warmup));
  const fakeLoop = await rig.fake.ask<{ loopP99Ms: number }>("loop");
  return {
    added: { p50: diffs.p50, p99: diffs.p99, pairs: diffs.n },
    oursP99: summarize(pooled(o.run.latencies, load.warmup)).p99,
    directP99: summarize(pooled(d.run.latencies, load.warmup)).p99,
    nodeCores: o.after.nodes.map((cpu, i) => (cpu - (o.before.nodes[i] as number)) / (o.wallMs / 1000)),
    cpuUsPerDelta: ((o.after.nodes.reduce((a, b) => a + b, 0) - o.before.nodes.reduce((a, b) => a + b, 0)) * 1e6) / (load.sessions * load.tokens),
    machineBusy: (o.after.machine.busy - o.before.machine.busy) / (o.after.machine.total - o.before.machine.total),
    nodeLoopP99Ms: Math.max(...o.after.loopP99Ms),
    loadLoopP99Ms: Math.max(o.run.loopP99Ms, d.run.loopP99Ms, fakeLoop.loopP99Ms),
  };
}

const nodesLabel = (nodes: number): string => (nodes === 1 ? "1 node" : `${nodes} nodes`);

function pointRow(point: ClusterPoint): Row {
  const at = (of: (r: ClusterRound) => number) => overRounds(point.rounds, of);
  const added = at((r) => r.added.p99);
  const cores = point.rounds[0]?.nodeCores.map((_, i) => at((r) => r.nodeCores[i] as number).median) ?? [];
  const busy = at((r) => r.machineBusy);
  const loadLoop = at((r) => r.loadLoopP99Ms);
  return {
    metric: `${nodesLabel(point.nodes)}, ${point.sessions}x${RATE}/s: added per delta, p99`,
    measured: ms(added.median),
    value: added.median,
    note:
      `ours p99 ${ms(at((r) => r.oursP99).median)}, direct ${ms(at((r) => r.directP99).median)}; ${spread(added)}; ` +
      `node CPU ${cores.map((c) => `${fmt(c * 100)}%`).join(" + ")} of a core (${fmt(at((r) => r.cpuUsPerDelta).median)} µs per delta), event-loop p99 ${ms(at((r) => r.nodeLoopP99Ms).median)}; machine ${fmt(busy.median * 100)}% busy; ` +
      `load generator loop p99 ≤ ${fmt(loadLoop.max, 1)} ms`,
  };
}

interface Sweep {
  points: ClusterPoint[];
  /** The largest load under the target (0: none). */
  capacity: number;
  crossed?: ClusterPoint;
  /** Set when the time budget ran out before a load crossed the target. */
  outOfTime?: boolean;
}

const addedP99 = (point: ClusterPoint): number => overRounds(point.rounds, (r) => r.added.p99).median;

/**
 * Raises the load until the added p99 reaches the target (the loads above it are not run),
 * or until the sweep's time budget is spent (the section has to end within run.ts's cap).
 */
async function sweep(rig: LoadRig, cluster: Cluster, nodes: number, options: BenchOptions): Promise<Sweep> {
  const loads = pick(options, [10, 25, 50, 100, 150, 200, 300, 400], [25, 50, 100, 200]);
  const deadline = Date.now() + pick(options, 90_000, 35_000);
  const rounds = pick(options, 2, 1);
  const seconds = pick(options, 3, 1.5);
  const tokens = Math.round(RATE * seconds);
  const warmup = Math.round(RATE * pick(options, 0.5, 0.3));
  const connections = (sessions: number): number => Math.min(sessions, MAX_CONNECTIONS);
  // Not counted: loads every code path in the nodes and the load generator.
  progress(`cluster: ${nodesLabel(nodes)}, warm-up round`);
  const first = loads[0] as number;
  await clusterRound(rig, cluster, { sessions: first, tokens: Math.round(RATE * 0.5), warmup: 0, connections: connections(first) }, 0);
  const result: Sweep = { points: [], capacity: 0 };
  for (const sessions of loads) {
    if (Date.now() > deadline) {
      result.outOfTime = true;
      break;
    }
    progress(`cluster: ${nodesLabel(nodes)}, ${sessions} sessions x ${RATE} deltas/s for ${seconds} s, ${rounds} round(s)`);
    const point: ClusterPoint = { nodes, sessions, rounds: [] };
    for (let r = 0; r < rounds; r++) point.rounds.push(await clusterRound(rig, cluster, { sessions, tokens, warmup, connections: connections(sessions) }, r));
    result.points.push(point);
    if (addedP99(point) >= ADDED_P99_TARGET_MS) {
      result.crossed = point;
      break;
    }
    result.capacity = sessions;
  }
  return result;
}

function capacityRow(nodes: number, s: Sweep): Row {
  const last = s.points.at(-1) as ClusterPoint;
  return {
    metric: `${nodesLabel(nodes)}: sessions at ${RATE} deltas/s with added p99 < ${ADDED_P99_TARGET_MS} ms`,
    measured: fmt(s.capacity),
    note: s.crossed
      ? `first load over it: ${s.crossed.sessions} sessions (${ms(addedP99(s.crossed))}); loads above it not run`
      : `no load crossed it, up to ${last.sessions} sessions (${s.outOfTime ? "the time budget ran out there" : "the largest swept"})`,
  };
}

function ratioRow(one: Sweep, two: Sweep): Row {
  const value = one.capacity > 0 ? two.capacity / one.capacity : Number.NaN;
  const atTwo = (two.crossed ?? two.points.at(-1)) as ClusterPoint;
  const at = (of: (r: ClusterRound) => number) => overRounds(atTwo.rounds, of).median;
  return {
    metric: "capacity, two nodes / one node",
    target: `≥ ${RATIO_TARGET}`,
    measured: Number.isFinite(value) ? ratio(value) : "n/a",
    ok: value >= RATIO_TARGET,
    note:
      `${two.capacity} / ${one.capacity} sessions. Both nodes, HAProxy, PostgreSQL, NATS, the fake provider and the clients share this machine's 2 cores, so a second node brings no CPU: ` +
      `at ${atTwo.sessions} sessions the two nodes used ${fmt(
        at((r) => r.nodeCores.reduce((a, b) => a + b, 0)),
        2,
      )} cores (${fmt(at((r) => r.cpuUsPerDelta))} µs per delta), ` +
      `their event-loop p99 was ${ms(at((r) => r.nodeLoopP99Ms))}, the machine ${fmt(at((r) => r.machineBusy) * 100)}% busy`,
  };
}

/** Polls `condition` every 50 ms until it holds (throws after `timeoutMs`). */
async function until(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** Kills the node owning half the held sessions and times their re-attach through HAProxy. */
async function reattachAfterKill(rig: LoadRig, cluster: Cluster, options: BenchOptions): Promise<Row[]> {
  const [victim, survivor] = cluster.nodes;
  if (!victim || !survivor) throw new Error("re-attach needs two nodes");
  // Round robin sends about half to each node; the killed node's are measured.
  const total = 2 * pick(options, 20, 10);
  progress(`cluster: ${total} sessions held through HAProxy, half of each node's mid-turn, then kill -9 of ${victim.name}`);
  // Each held session first completes a short turn: a session that never stored its state
  // (no turn yet) cannot be adopted, it ends with status `error` when its node dies.
  await rig.fake.ask("plan", { count: total, tokens: 5, rate: RATE });
  const { sessionIds } = await rig.clients.ask<{ sessionIds: string[] }>("hold", {
    serverUrl: cluster.url,
    sessions: total,
    connections: Math.min(total, 20),
    model: BENCH_MODEL,
  });
  const db = new pg.Client({ connectionString: cluster.databaseUrl });
  await db.connect();
  try {
    const ownerOf = async (): Promise<Map<string, string>> =>
      new Map(
        (await db.query<{ id: string; node_id: string }>("SELECT id, node_id FROM sessions WHERE id = ANY($1)", [sessionIds])).rows.map((r) => [
          r.id,
          r.node_id,
        ]),
      );
    const owners = await ownerOf();
    const onVictim = sessionIds.filter((id) => owners.get(id) === victim.name);
    if (onVictim.length === 0) throw new Error(`no held session is owned by ${victim.name}`);
    const midOnVictim = onVictim.filter((_, i) => i % 2 === 0);
    const midTurn = [...midOnVictim, ...sessionIds.filter((id) => owners.get(id) !== victim.name).filter((_, i) => i % 2 === 0)];
    // The turns run far longer than the measurement: the kill cuts them.
    await rig.fake.ask("plan", { count: midTurn.length, tokens: RATE * 60, rate: RATE });
    await rig.clients.ask("startTurns", { sessionIds: midTurn });
    // The running turns are in the stored state before the node dies (else nothing was mid-turn to adopt).
    await until(
      async () =>
        Number((await db.query("SELECT count(*) AS n FROM sessions WHERE id = ANY($1) AND state LIKE '%runningTurn%'", [midOnVictim])).rows[0].n) ===
        midOnVictim.length,
      15_000,
      "running turns stored",
    );
    const killedAt = monoMs();
    await victim.stop("SIGKILL");
    const done = await rig.clients.ask<Reattached[]>("reattached", { sessionIds: onVictim }, 60_000);
    const after = await ownerOf();
    await rig.clients.ask("release");
    const times = summarize(done.map((d) => d.firstAt - killedAt));
    const attempts = summarize(done.map((d) => d.attempts));
    const interrupted = done.filter((d) => midOnVictim.includes(d.sessionId) && d.first === "error:interrupted").length;
    const pongs = done.filter((d) => !midOnVictim.includes(d.sessionId) && d.first === "pong").length;
    const adopted = onVictim.filter((id) => after.get(id) === survivor.name).length;
    return [
      {
        metric: "re-attach after kill -9 of the owner: kill → first response, p50 / p99",
        measured: `${ms(times.p50)} / ${ms(times.p99)}`,
        value: times.p99,
        note:
          `${onVictim.length} sessions owned by the killed node (${midOnVictim.length} mid-turn, ${onVictim.length - midOnVictim.length} idle) of ${total} held through HAProxy; ` +
          `ROZ_NODE_EXPIRY_MS=${EXPIRY_MS}, ROZ_NODE_HEARTBEAT_MS=${HEARTBEAT_MS}: adoption waits for the dead node's heartbeat to expire; max ${ms(times.max)}`,
      },
      {
        metric: "re-attach attempts per session, p50 / max",
        measured: `${fmt(attempts.p50)} / ${fmt(attempts.max)}`,
        note: "refused with UNAVAILABLE while the dead node counts as alive; the client retries every 100 ms",
      },
      {
        metric: "first response: interrupted (mid-turn) / pong (idle); adopted",
        target: "all",
        measured: `${interrupted} / ${pongs}; ${adopted}`,
        ok: interrupted === midOnVictim.length && pongs === onVictim.length - midOnVictim.length && adopted === onVictim.length,
        note: `of ${midOnVictim.length} / ${onVictim.length - midOnVictim.length}; ${adopted} of ${onVictim.length} now owned by ${survivor.name} in PostgreSQL`,
      },
    ];
  } finally {
    await db.end();
  }
}

export async function runCluster(options: BenchOptions): Promise<Row[]> {
  const pre: ClusterPrerequisites | undefined = await clusterPrerequisites();
  if (pre === undefined) {
    return [{ metric: "cluster", measured: "skipped", note: "PostgreSQL, nats-server or haproxy missing (the warning above says which)" }];
  }
  const { fake, fakeBaseURL } = await startFake();
  let clients: LoadRig["clients"] | undefined;
  try {
    clients = await startClients();
    const rig: LoadRig = { fake, clients, fakeBaseURL };
    const env = {
      ...benchServerDefaults,
      // The loopback topology waits for the node's "roz listening" line, logged at info.
      ROZ_LOG_LEVEL: "info",
      // HAProxy carries all clients' streams on a few connections per node: their resets add up there.
      ROZ_HTTP2_MAX_RESETS_PER_SECOND: "0",
      ROZ_NODE_HEARTBEAT_MS: String(HEARTBEAT_MS),
      ROZ_NODE_EXPIRY_MS: String(EXPIRY_MS),
      OPENAI_API_KEY: "bench",
      OPENAI_BASE_URL: fakeBaseURL,
      ROZ_OPENAI_API: "chat",
    };
    const sweeps: Sweep[] = [];
    const rows: Row[] = [];
    for (const nodes of [1, 2]) {
      progress(`cluster: starting ${nodesLabel(nodes)}, PostgreSQL, NATS, HAProxy`);
      const cluster = await startCluster(pre, { nodes, env });
      try {
        const s = await sweep(rig, cluster, nodes, options);
        sweeps.push(s);
        rows.push(...s.points.map(pointRow), capacityRow(nodes, s));
        if (nodes === 2) {
          rows.push(ratioRow(sweeps[0] as Sweep, s));
          rows.push(...(await reattachAfterKill(rig, cluster, options)));
        }
      } finally {
        await cluster.close();
      }
    }
    options.figures.cluster = sweeps.map((s) => s.points);
    return rows;
  } finally {
    await clients?.close();
    await fake.close();
    await pre.stop();
  }
}
