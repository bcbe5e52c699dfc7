import type { FastifyInstance } from "fastify";
import type { EventBus } from "../bus/index.ts";
import type { ModelCatalog } from "../models/index.ts";
import type { RpcAuthenticator } from "../rpc/index.ts";
import type { SessionPersistence, SessionRegistry } from "../session/index.ts";
import type { Store } from "../store/index.ts";
import type { Teams } from "../teams/index.ts";
import { agentSettingsOf, modelsOf } from "./agent-setup.ts";
import { createAuthenticator } from "./auth-setup.ts";
import { openBus } from "./bus-setup.ts";
import { wireCluster } from "./cluster-wiring.ts";
import { type Config, defaultPublicUrl } from "./config.ts";
import { createHttpServer } from "./http-server.ts";
import { Lifecycle } from "./lifecycle.ts";
import { createMetrics } from "./metrics.ts";
import { startNodeHeartbeat } from "./node-heartbeat.ts";
import { nodeIdentityOf } from "./node-identity.ts";
import { createRateLimits } from "./rate-limit.ts";
import { registerConsole, registerRestEdge, registerRestRoutes } from "./routes-setup.ts";
import { registerRpc, registerRpcEdge } from "./rpc-setup.ts";
import { createMcp } from "./mcp-setup.ts";
import { createSessions } from "./sessions-setup.ts";
import { startSessionRetention } from "./session-retention.ts";
import { createSpendMeter } from "./spend-meter.ts";
import { setUpStore } from "./store-setup.ts";
import { startTeams } from "./team-wiring.ts";
import { startTracing } from "./tracing-setup.ts";

/** Parts a test or benchmark may swap; everything else is built from `Config`. */
export interface AppOverrides {
  persistence?: SessionPersistence;
  models?: ModelCatalog;
  authenticate?: RpcAuthenticator;
  /** A store the caller owns (not closed by `close()`); default: opened from `Config`. */
  store?: Store;
  /** A bus the caller owns (not closed by `close()`); default: the in-memory bus. */
  bus?: EventBus;
}

export interface App {
  readonly fastify: FastifyInstance;
  readonly config: Config;
  readonly models: ModelCatalog;
  readonly registry: SessionRegistry;
  readonly store: Store;
  readonly teams: Teams;
  /** The event bus (in-memory, or NATS with `NATS_URL`). */
  readonly bus: EventBus;
  /** This process's id in the store's `nodes` (ROZ_NODE_ID, else hostname-pid-random). */
  readonly nodeId: string;
  /** Listens on the configured host and port; resolves with the base URL. */
  listen(): Promise<string>;
  /**
   * Stops accepting; running turns get the grace period to finish (then they are
   * interrupted); every live session is stored and detached (resumable by the next process),
   * open streams end with UNAVAILABLE; then everything closes. Idle streams cost no wait.
   * A step that fails is logged and the others still run.
   */
  close(): Promise<void>;
}

/**
 * Builds the whole server from configuration: the composition root. Each module registers its
 * shutdown step as it opens (see `SHUTDOWN_ORDER`); a start-up that fails closes what was
 * opened so far and rethrows.
 */
export async function createApp(config: Config, overrides: AppOverrides = {}): Promise<App> {
  const metrics = createMetrics();
  const lifecycle = new Lifecycle();
  const telemetry = await startTracing(config, lifecycle, () => http.fastify.log);
  const timed = modelsOf(config, overrides.models, metrics);
  const models = telemetry?.traceModels(timed) ?? timed;
  const agent = agentSettingsOf(config);
  const http = createHttpServer(config, metrics, lifecycle, telemetry?.logIds);
  const app = http.fastify;
  const log = app.log;
  /** The base URL once listening (the bound port when ROZ_PORT is 0). */
  let listening: string | undefined;
  telemetry?.traceRest(app);
  registerRpcEdge(app, config);
  try {
    const node = nodeIdentityOf(config);
    const nodeId = node.id;
    const store = await setUpStore(config, overrides.store, log, lifecycle);
    const bus = await lifecycle.own("bus", overrides.bus, () => openBus(config, nodeId, log));
    const authenticator = await createAuthenticator(config, store, log);
    const authenticate: RpcAuthenticator = overrides.authenticate ?? ((authorization, scope) => authenticator.authenticate(authorization, scope));
    const heartbeat = await startNodeHeartbeat(store, node, config, log, lifecycle);
    startSessionRetention(store, nodeId, config, log, lifecycle);
    metrics.observeBus(bus, nodeId);
    const mcp = createMcp(config, store, log, lifecycle, () => config.publicUrl ?? listening ?? defaultPublicUrl(config));
    const spend = createSpendMeter(store, metrics, log);
    const teams = await startTeams({ config, store, bus, models, agent, nodeId, heartbeat, mcp, spend, log, lifecycle, telemetry });
    const rateLimits = createRateLimits(config);
    const sessions = createSessions({
      config,
      store,
      persistence: overrides.persistence,
      node,
      models,
      agent,
      teams,
      mcp,
      spend,
      rateLimits,
      metrics,
      log,
      lifecycle,
      telemetry,
    });
    const { routing, relay } = wireCluster(bus, nodeId, sessions, metrics, log, lifecycle);
    await registerRestEdge(app, { config, authenticate, rateLimits, metrics });
    await registerRpc({ config, http, sessions, teams, mcp, authenticator, authenticate, relay, metrics, lifecycle });
    await registerRestRoutes(app, {
      nodeId,
      store,
      bus,
      models,
      registry: sessions.registry,
      conversation: sessions.conversation,
      routing,
      teams,
      mcp,
      authenticator,
      metrics,
      lifecycle,
    });
    await registerConsole(app, config);
    return {
      fastify: app,
      config,
      models,
      registry: sessions.registry,
      store,
      teams,
      bus,
      nodeId,
      listen: async () => (listening = await http.listen()),
      close: () => lifecycle.close(log),
    };
  } catch (err) {
    await lifecycle.close(log);
    throw err;
  }
}
