/**
 * The multi-node topology without containers, all on loopback: N roz processes (the real CLI)
 * sharing one PostgreSQL database and one nats-server, behind HAProxy running the repository's
 * own `deploy/haproxy.cfg` (its bind address and server lines replaced, its Docker resolver
 * dropped, maxconn lowered, an admin socket added so tests can see which nodes HAProxy holds UP).
 *
 * `clusterPrerequisites()` says whether PostgreSQL, nats-server and haproxy can be had; it
 * returns undefined (after a `console.warn`) when not, and throws instead under `CI=true`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { expect } from "vitest";
import type { SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";
import { freePort, natsForTests, waitForPort, type TestNats } from "./nats.ts";
import { postgresForTests, type TestPostgres } from "./postgres.ts";
import { metric, repoRoot, spawnServer, type ExitStatus, type SpawnedServer } from "./server.ts";
import type { SessionClient, SessionClientFactory } from "./session-client.ts";
import { caseOf, rq, show } from "./session-protocol.ts";

export interface ClusterPrerequisites {
  pg: TestPostgres;
  nats: TestNats;
  haproxy: string;
  /** Stops what was started for the cluster (nats-server, a throwaway PostgreSQL). */
  stop(): Promise<void>;
}

const HAPROXY_CANDIDATES = [process.env.ROZ_TEST_HAPROXY, "/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"];

function findHaproxy(): string | undefined {
  for (const path of HAPROXY_CANDIDATES) {
    if (!path) continue;
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not there
    }
  }
  return undefined;
}

/** See the module comment. */
export async function clusterPrerequisites(): Promise<ClusterPrerequisites | undefined> {
  const haproxy = findHaproxy();
  if (haproxy === undefined) {
    const reason = "no haproxy binary found (apt-get install haproxy, or set ROZ_TEST_HAPROXY)";
    if (process.env.CI === "true") throw new Error(`haproxy required in CI but unavailable: ${reason}`);
    console.warn(`[cluster] tests skipped: ${reason}`);
    return undefined;
  }
  const pg = await postgresForTests();
  if (pg === undefined) {
    if (process.env.CI === "true") throw new Error("PostgreSQL required in CI for the cluster tests but unavailable");
    return undefined;
  }
  const nats = await natsForTests();
  if (nats === undefined) {
    await pg.stop();
    return undefined;
  }
  return {
    pg,
    nats,
    haproxy,
    async stop() {
      await nats.stop();
      await pg.stop();
    },
  };
}

/** One roz process of the cluster; it keeps its port across restarts (HAProxy knows it by port). */
export interface ClusterNode {
  readonly name: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>`: the node itself, bypassing HAProxy. */
  readonly url: string;
  /** The running process (undefined while stopped). */
  readonly process: SpawnedServer | undefined;
  /** Starts the node (again), with `env` added to the cluster's and the nodes' own settings (see `Cluster.configure`). */
  start(env?: Record<string, string>): Promise<void>;
  /** SIGTERM (graceful drain) unless told, and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<ExitStatus | undefined>;
}

export interface Cluster {
  /** HAProxy's frontend: `http://127.0.0.1:<port>` (HTTP/1.1 and h2c). */
  readonly url: string;
  readonly nodes: readonly ClusterNode[];
  readonly databaseUrl: string;
  readonly natsUrl: string;
  /** HAProxy's view of each node: `UP`, `DOWN`, `MAINT`, … by node name. */
  backendStates(): Promise<Record<string, string>>;
  /** Resolves once HAProxy holds exactly these nodes UP (and the others not). */
  waitForBackends(up: readonly string[], timeoutMs?: number): Promise<void>;
  /** What HAProxy printed (its request log). */
  haproxyLog(): string;
  /**
   * Makes `env` the nodes' own settings, added to the cluster's at every later start, and
   * restarts each node that is stopped or runs with other settings; resolves once HAProxy
   * holds every node UP.
   */
  configure(env: Record<string, string>): Promise<void>;
  /** Starts one more node on the same store and bus, outside HAProxy and `nodes`; `close` stops it too. */
  addNode(): Promise<ClusterNode>;
  close(): Promise<void>;
}

/** Settings for tests that open many sessions from one address with one key: no rate limits. */
export const NO_RATE_LIMITS = { ROZ_SESSION_RATE_LIMIT_PER_MINUTE: "0", ROZ_RATE_LIMIT_PER_MINUTE: "0" } as const;

export interface ClusterOptions {
  nodes: number;
  /** Settings every node gets (besides DATABASE_URL, NATS_URL, ROZ_NODE_ID, ROZ_PORT). */
  env?: Record<string, string>;
}

/** Turns `deploy/haproxy.cfg` into the loopback topology's config. */
export function haproxyConfig(frontendPort: number, backends: readonly { name: string; port: number }[], adminSocket: string): string {
  const source = readFileSync(join(repoRoot, "deploy", "haproxy.cfg"), "utf8");
  const out: string[] = [];
  let inResolvers = false;
  let serversWritten = false;
  for (const line of source.split("\n")) {
    const trimmed = line.trim();
    if (/^resolvers\s/.test(line)) {
      inResolvers = true;
      continue;
    }
    if (inResolvers) {
      if (trimmed === "" || /^\S/.test(line)) inResolvers = false;
      else continue;
    }
    // The tests need few connections, and HAProxy refuses to start when maxconn asks for more
    // file descriptors than the process may open (CI's limit may be low).
    if (/^maxconn\s/.test(trimmed)) {
      out.push("  maxconn 256");
      continue;
    }
    if (/^global\b/.test(line)) {
      out.push(line, `  stats socket ${adminSocket} mode 600 level admin`);
      continue;
    }
    if (/^bind\s/.test(trimmed)) {
      out.push(`  bind 127.0.0.1:${frontendPort}`);
      continue;
    }
    if (/^server\s/.test(trimmed)) {
      if (!serversWritten) for (const b of backends) out.push(`  server ${b.name} 127.0.0.1:${b.port}`);
      serversWritten = true;
      continue;
    }
    out.push(line);
  }
  if (!serversWritten) throw new Error("deploy/haproxy.cfg has no server lines to replace");
  return out.join("\n");
}

/** Sends one command to HAProxy's admin socket and returns the answer. */
async function adminCommand(socketPath: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = "";
    const socket = createConnection(socketPath, () => socket.end(`${command}\n`));
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (answer += chunk));
    socket.once("error", reject);
    socket.once("close", () => resolve(answer));
  });
}

/** Starts PostgreSQL's database, the nodes and HAProxy; resolves once HAProxy holds every node UP. */
export async function startCluster(pre: ClusterPrerequisites, options: ClusterOptions): Promise<Cluster> {
  const databaseUrl = await pre.pg.createDatabase();
  const dir = mkdtempSync(join(tmpdir(), "roz-cluster-"));
  const names = Array.from({ length: options.nodes }, (_, i) => `node-${String.fromCharCode(97 + i)}`);
  const ports = await Promise.all(names.map(() => freePort()));
  const clusterEnv = { ...options.env, DATABASE_URL: databaseUrl, NATS_URL: pre.nats.url };
  let nodeEnv: Record<string, string> = {};
  const nodes = names.map((name, i) => makeNode(name, ports[i]!, clusterEnv, () => nodeEnv));
  const spares: ClusterNode[] = [];

  let haproxy: ChildProcess | undefined;
  let haproxyOutput = "";
  const adminSocket = join(dir, "admin.sock");
  const cluster: Cluster = {
    url: "",
    nodes,
    databaseUrl,
    natsUrl: pre.nats.url,
    async backendStates() {
      const csv = await adminCommand(adminSocket, "show stat");
      const header = csv.split("\n")[0]!.replace(/^# /, "").split(",");
      const px = header.indexOf("pxname");
      const sv = header.indexOf("svname");
      const status = header.indexOf("status");
      const states: Record<string, string> = {};
      for (const row of csv.split("\n").slice(1)) {
        const cols = row.split(",");
        if (cols[px] === "roz_nodes" && cols[sv] !== "BACKEND" && cols[sv] !== undefined) states[cols[sv]!] = cols[status]!;
      }
      return states;
    },
    async waitForBackends(up, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const states = await cluster.backendStates().catch(() => ({}) as Record<string, string>);
        const isUp = (name: string): boolean => states[name]?.startsWith("UP") === true;
        if (names.every((n) => isUp(n) === up.includes(n))) return;
        if (Date.now() > deadline) throw new Error(`HAProxy backends ${JSON.stringify(states)}, wanted UP: ${up.join(", ")}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    haproxyLog: () => haproxyOutput,
    async configure(env) {
      nodeEnv = env;
      await Promise.all(
        nodes.map(async (node) => {
          if (node.runsWith(env)) return;
          await node.stop();
          await node.start();
        }),
      );
      await cluster.waitForBackends(names);
    },
    async addNode() {
      const node = makeNode(`node-${String.fromCharCode(97 + nodes.length + spares.length)}`, await freePort(), clusterEnv, () => nodeEnv);
      spares.push(node);
      await node.start();
      return node;
    },
    async close() {
      await Promise.all([...nodes, ...spares].map((n) => n.process?.dispose()));
      if (haproxy && haproxy.exitCode === null && haproxy.signalCode === null) {
        const exited = new Promise((resolve) => haproxy!.once("exit", resolve));
        haproxy.kill("SIGKILL");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };

  try {
    await Promise.all(nodes.map((n) => n.start()));
    const frontendPort = await freePort();
    const configPath = join(dir, "haproxy.cfg");
    writeFileSync(
      configPath,
      haproxyConfig(
        frontendPort,
        names.map((name, i) => ({ name, port: ports[i]! })),
        adminSocket,
      ),
    );
    const proc = spawn(pre.haproxy, ["-db", "-f", configPath], { stdio: ["ignore", "pipe", "pipe"] });
    haproxy = proc;
    let exitedWith: string | undefined;
    proc.once("exit", (code, signal) => (exitedWith = `haproxy exited (${signal ?? code}):\n${haproxyOutput.slice(-4000)}`));
    const keep = (chunk: Buffer): void => {
      haproxyOutput = (haproxyOutput + chunk.toString()).slice(-256_000);
    };
    proc.stdout!.on("data", keep);
    proc.stderr!.on("data", keep);
    await waitForPort(frontendPort, 20_000, () => exitedWith);
    (cluster as { url: string }).url = `http://127.0.0.1:${frontendPort}`;
    await cluster.waitForBackends(names);
  } catch (err) {
    await cluster.close();
    throw err;
  }
  return cluster;
}

interface ManagedNode extends ClusterNode {
  /** Whether the node runs, with exactly these own settings. */
  runsWith(env: Record<string, string>): boolean;
}

function makeNode(name: string, port: number, env: Record<string, string>, nodeEnv: () => Record<string, string>): ManagedNode {
  let current: SpawnedServer | undefined;
  let startedWith = "";
  const running = (): boolean => current !== undefined && current.child.exitCode === null && current.child.signalCode === null;
  return {
    name,
    port,
    url: `http://127.0.0.1:${port}`,
    get process() {
      return current;
    },
    async start(extra = {}) {
      if (running()) throw new Error(`${name} is already running`);
      await current?.dispose();
      const own = { ...nodeEnv(), ...extra };
      current = await spawnServer({ ...env, ...own, ROZ_NODE_ID: name, ROZ_PORT: String(port) }, 60_000);
      startedWith = JSON.stringify(own);
    },
    runsWith: (own) => running() && startedWith === JSON.stringify(own),
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      return current?.stop(signal);
    },
  };
}

/** Live sessions of one node, from its own /metrics. */
export const activeSessions = async (nodeUrl: string): Promise<number> => (await metric(nodeUrl, /^roz_sessions\{status="active"\} (\d+)$/m)) ?? 0;

/** Relayed streams of one node, from its own /metrics: those it serves to its clients, or hosts as the owner. */
export const relayedStreams = async (nodeUrl: string, side: "client" | "owner"): Promise<number> =>
  (await metric(nodeUrl, new RegExp(`^roz_relayed_streams\\{side="${side}"\\} (\\d+)$`, "m"))) ?? -1;

/** One conversation's client: what it has seen (by seq, once each) and its current stream. */
export interface Conversation {
  sessionId: string;
  client: SessionClient;
  seen: SessionResponse[];
}

export const lastSeq = (c: Conversation): bigint => c.seen.at(-1)?.seq ?? 0n;

/** Keeps the numbered responses a stream delivered after what the conversation had. */
export function keep(c: Conversation, responses: readonly SessionResponse[]): void {
  for (const r of responses) if (r.seq > lastSeq(c)) c.seen.push(r);
}

/**
 * Re-attaches with the conversation's last seq until a node takes the stream (UNAVAILABLE
 * while none can yet); a ping's pong says it was taken. What was replayed before the pong is
 * not kept: callers re-attach between turns.
 */
export async function reattach(factory: SessionClientFactory, c: Conversation): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const client = factory.open();
    client.send({ request: { case: "resume", value: { sessionId: c.sessionId, afterSeq: lastSeq(c) } } });
    client.send(rq.ping());
    const first = await Promise.race([
      client.responses.nextMatching((r) => caseOf(r) === "pong", 15_000).catch(() => undefined),
      client.status.then(() => undefined),
    ]);
    if (first !== undefined) {
      c.client = client;
      return;
    }
    await client.status;
    await delay(100);
  }
  throw new Error(`no node took session ${c.sessionId}`);
}

/**
 * Checks that a conversation saw exactly what a client that never moved sees: a fresh stream
 * through `factory` replays the same responses from seq 1 (nothing lost), and the numbers the
 * conversation saw only go up (nothing twice). The fresh stream then ends the session.
 */
export async function expectSameAsReplay(factory: SessionClientFactory, c: Conversation, what = `session ${c.sessionId}`): Promise<void> {
  expect(
    c.seen.every((r, k) => k === 0 || r.seq > c.seen[k - 1]!.seq),
    `${what}: ${c.seen.map(show).join("\n")}`,
  ).toBe(true);
  const fresh = factory.open();
  fresh.send({ request: { case: "resume", value: { sessionId: c.sessionId, afterSeq: 0n } } });
  const replay: SessionResponse[] = [];
  try {
    while (replay.length < c.seen.length) replay.push(await fresh.next(15_000));
  } finally {
    fresh.send(rq.cancelSession("done"));
    await fresh.status;
  }
  expect(replay.map(show), what).toEqual(c.seen.map(show));
}
