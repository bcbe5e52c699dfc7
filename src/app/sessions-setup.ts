import { setTimeout as delay } from "node:timers/promises";
import type { FastifyBaseLogger } from "fastify";
import type { ModelCatalog } from "../models/index.ts";
import { decodeDeltaResponse, encodeResponse } from "../rpc/index.ts";
import {
  ConversationControl,
  type SessionDeps,
  SessionDirectory,
  type SessionPersistence,
  SessionRegistry,
  type SessionStream,
  storePersistence,
} from "../session/index.ts";
import type { Store } from "../store/index.ts";
import type { Teams } from "../teams/index.ts";
import type { AgentSettings } from "./agent-setup.ts";
import type { Config } from "./config.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Metrics } from "./metrics.ts";
import { type NodeIdentity, stopDeadLocalNodes } from "./node-identity.ts";
import type { RateLimits } from "./rate-limit.ts";
import type { SpendMeter } from "./spend-meter.ts";
import { combineExtensions, type Mcp } from "./mcp-setup.ts";
import { teamExtension } from "./team-wiring.ts";
import { agentFactory } from "./tracing-setup.ts";
import type { Telemetry } from "../telemetry/index.ts";

/** Kept responses a live session holds in memory at most (older ones are read from the store). */
const MEMORY_EVENTS = 2_000;

/** The live sessions of this node and what running them needs. */
export interface Sessions {
  readonly deps: SessionDeps;
  readonly registry: SessionRegistry;
  readonly directory: SessionDirectory;
  /** Fork and rollback for callers without a stream (REST). */
  readonly conversation: ConversationControl;
  /** Session streams open on this node (its clients' and relayed ones): ended at shutdown. */
  readonly openStreams: Set<SessionStream>;
}

export interface SessionsSetup {
  config: Config;
  store: Store;
  /** A test's or benchmark's persistence; default: the store, timed per call. */
  persistence: SessionPersistence | undefined;
  node: NodeIdentity;
  models: ModelCatalog;
  agent: AgentSettings;
  teams: Teams;
  mcp: Mcp;
  spend: SpendMeter;
  rateLimits: RateLimits;
  metrics: Metrics;
  log: FastifyBaseLogger;
  lifecycle: Lifecycle;
  /** Tracing, when an OTLP endpoint is configured: turns and tool calls become spans. */
  telemetry: Telemetry | undefined;
}

/**
 * Builds the session registry and directory. At shutdown running turns get the grace period to
 * finish (then they are interrupted), every live session is stored and detached (resumable by
 * the next process), and open streams end with UNAVAILABLE. Idle sessions cost no wait.
 */
export function createSessions(setup: SessionsSetup): Sessions {
  const { config, store, node, agent, metrics, lifecycle } = setup;
  // An owner on this host whose process is gone is dead at once: not waited for, and marked so for every node.
  const isGone = async (nodeId: string) => (await stopDeadLocalNodes(store, node)).includes(nodeId);
  const deps: SessionDeps = {
    models: setup.models,
    createAgent: agentFactory(setup.telemetry),
    ...(setup.telemetry ? { tracing: setup.telemetry.tracing } : {}),
    persistence:
      setup.persistence ?? storePersistence(store, { id: node.id, expiryMs: config.nodeExpiryMs, isGone }, (op, run) => metrics.observeStore(op, run)),
    limits: agent.limits,
    defaultPermissions: agent.defaultPermissions,
    defaultMaxContextTokens: config.maxContextTokens,
    keepaliveIntervalMs: config.keepaliveIntervalMs,
    detachGraceMs: config.detachGraceMs,
    maxWaitingInputs: config.maxQueuedInputs,
    log: setup.log,
    metrics: metrics.session,
    allowSessionStart: (principal) => setup.rateLimits.allowSessionStart(principal),
    teamsDefault: config.teamsDefault === "on",
    extend: combineExtensions(teamExtension(setup.teams), (link) => setup.mcp.extension(link)),
    startTimeoutMs: config.startTimeoutMs,
    spend: (session) => setup.spend.gate(session),
    encodeEvent: encodeResponse,
    decodeDelta: decodeDeltaResponse,
    memoryEvents: Math.max(1, Math.min(config.eventRetention, MEMORY_EVENTS)),
  };
  const registry = new SessionRegistry();
  const openStreams = new Set<SessionStream>();
  lifecycle.onClose("running turns", async () => {
    // Only running turns deserve the grace period; at its end they are interrupted.
    const turns = Promise.all(registry.all().map((s) => s.idle()));
    const deadline = new AbortController();
    await Promise.race([turns, delay(config.shutdownGraceMs, undefined, { signal: deadline.signal }).catch(() => undefined)]);
    deadline.abort();
  });
  lifecycle.onClose("live sessions", () => Promise.all(registry.all().map((s) => registry.suspend(s))));
  lifecycle.onClose("open streams", () => {
    for (const stream of openStreams) stream.shutdown();
  });
  const directory = new SessionDirectory(deps, registry);
  return { deps, registry, directory, conversation: new ConversationControl(deps, registry, directory), openStreams };
}
