import { readFileSync } from "node:fs";
import type { Http2ServerRequest } from "node:http2";
import type { IncomingMessage } from "node:http";
import { randomUUID } from "node:crypto";
import cors from "@fastify/cors";
import swagger from "@fastify/swagger";
import { cors as connectCors, createContextValues } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import fastify, { type FastifyInstance } from "fastify";
import { createAgent, type AgentLimits, type PermissionRule } from "../agent/index.ts";
import { AgentService } from "../gen/roz/v1/agent_pb.js";
import { createModelCatalog, type ModelCatalog } from "../models/index.ts";
import { createAgentService, rawRequestKey, type RpcAuthenticator } from "../rpc/index.ts";
import { registerReflection } from "../rpc/reflection/index.ts";
import { SessionRegistry, type SessionDeps, type SessionPersistence, type SessionStream } from "../session/index.ts";
import { healthRoutes } from "../../routes/health.ts";
import { openapiRoutes } from "../../routes/openapi.ts";
import { versionRoutes } from "../../routes/version.ts";
import { environmentRoutes } from "../../routes/environments.ts";
import { keyRoutes } from "../../routes/keys.ts";
import { metricsRoutes } from "../../routes/metrics.ts";
import { sessionRoutes } from "../../routes/sessions.ts";
import { type Authenticator, registerRestAuth } from "../auth/index.ts";
import { openStore, type Store } from "../store/index.ts";
import type { EventBus } from "../bus/index.ts";
import { createAuthenticator } from "./auth-setup.ts";
import { busReadiness, nodeIdOf, openBus } from "./bus-setup.ts";
import { createSessionRouting } from "./session-routing.ts";
import { createMetrics } from "./metrics.ts";
import { createRateLimits } from "./rate-limit.ts";
import { restValidatorCompiler } from "./rest-validation.ts";
import { storePersistence } from "./store-persistence.ts";
import type { Config } from "./config.ts";
import { loggerOptions } from "./logger.ts";
import { OnePortServer } from "./one-port.ts";
import { parsePermissionRules } from "./permission-rules.ts";
import { registerRestErrors } from "./rest-errors.ts";
import { SERVER_VERSION } from "./version.ts";

/** Parts a test or benchmark may swap; everything else is built from `Config`. */
export interface AppOverrides {
  persistence?: SessionPersistence;
  models?: ModelCatalog;
  authenticate?: RpcAuthenticator;
  /** A store the caller owns (not closed by `close()`); default: opened from `Config`. */
  store?: Store;
}

export interface App {
  readonly fastify: FastifyInstance;
  readonly config: Config;
  readonly models: ModelCatalog;
  readonly registry: SessionRegistry;
  readonly store: Store;
  /** The event bus (in-memory, or NATS with `NATS_URL`). */
  readonly bus: EventBus;
  /** Listens on the configured host and port; resolves with the base URL. */
  listen(): Promise<string>;
  /** Stops accepting, drains streams for the grace period, then closes everything. */
  close(): Promise<void>;
}

/** Builds the whole server from configuration: the composition root. */
export async function createApp(config: Config, overrides: AppOverrides = {}): Promise<App> {
  const metrics = createMetrics();
  const models = metrics.timeModels(
    overrides.models ??
    createModelCatalog({
      ...(config.openaiApiKey ? { openaiApiKey: config.openaiApiKey } : {}),
      ...(config.openaiBaseURL ? { openaiBaseURL: config.openaiBaseURL } : {}),
      ...(config.openaiApi ? { openaiApi: config.openaiApi } : {}),
      ...(config.providersFile ? { providersFile: config.providersFile } : {}),
      ...(config.defaultModel ? { defaultModel: config.defaultModel } : {}),
    }),
  );
  const defaultPermissions: PermissionRule[] = parsePermissionRules(config.permissionRules);
  const limits: AgentLimits = {
    maxCycles: config.maxCycles,
    toolErrorLimit: config.toolErrorLimit,
    approvalTimeoutMs: config.approvalTimeoutMs,
    defaultToolTimeoutMs: config.defaultToolTimeoutMs,
    toolResultMaxTokens: config.toolResultMaxTokens,
  };
  const tls = config.tlsCert && config.tlsKey ? { cert: readFileSync(config.tlsCert), key: readFileSync(config.tlsKey) } : undefined;

  let onePort: OnePortServer | undefined;
  const app = fastify({
    logger: loggerOptions(config),
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    bodyLimit: config.maxMessageBytes,
    serverFactory: (handler) => {
      onePort = new OnePortServer(handler as unknown as ConstructorParameters<typeof OnePortServer>[0], {
        ...(tls ? { tls } : {}),
        maxConcurrentStreams: config.maxConcurrentStreams,
        pingIntervalMs: config.http2PingIntervalMs,
      });
      return onePort.server as unknown as import("node:http").Server;
    },
  });
  app.addHook("onRequest", async (request, reply) => {
    void reply.header("x-request-id", request.id);
  });

  const store =
    overrides.store ??
    (await openStore({
      dataDir: config.dataDir,
      ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
      eventRetention: { maxEventsPerSession: config.eventRetention },
      sqliteSynchronous: config.sqliteSynchronous === "full" ? "FULL" : "NORMAL",
      onError: (err) => app.log.error({ err }, "store connection error"),
    }));
  const closeStore = async (): Promise<void> => {
    if (!overrides.store) await store.close();
  };
  let authenticator: Authenticator;
  let bus: EventBus | undefined;
  try {
    bus = await openBus(config, app.log);
    authenticator = await createAuthenticator(config, store, app.log);
    // Sessions that were running when the previous process died cannot resume.
    const orphaned = await store.markOrphanedSessions(config.nodeId);
    if (orphaned > 0) app.log.warn({ sessions: orphaned }, "marked sessions of a previous run as error");
  } catch (err) {
    await bus?.close();
    await closeStore();
    throw err;
  }
  metrics.observeBus(bus, nodeIdOf(config));
  const authenticate: RpcAuthenticator = overrides.authenticate ?? ((authorization, scope) => authenticator.authenticate(authorization, scope));
  const persistence = overrides.persistence ?? storePersistence(store, config.nodeId, (op, run) => metrics.observeStore(op, run));
  const rateLimits = createRateLimits(config);

  const registry = new SessionRegistry();
  // Only a networked bus has other nodes to route to.
  const routing = bus.kind === "memory" ? undefined : createSessionRouting(bus, nodeIdOf(config), registry);
  const openStreams = new Set<SessionStream>();
  let draining = false;
  const sessionDeps: SessionDeps = {
    models,
    createAgent,
    persistence,
    limits,
    defaultPermissions,
    defaultMaxContextTokens: config.maxContextTokens,
    keepaliveIntervalMs: config.keepaliveIntervalMs,
    detachGraceMs: config.detachGraceMs,
    log: app.log,
    metrics: metrics.session,
    allowSessionStart: (principal) => rateLimits.allowSessionStart(principal),
  };

  registerRestErrors(app);
  app.setValidatorCompiler(restValidatorCompiler());
  // REST bodies are JSON only: any other content type is a 415, not a string to validate.
  app.removeContentTypeParser("text/plain");
  registerRestAuth(app, { authenticate, rateLimit: (principal) => rateLimits.rest(principal) });
  metrics.registerHttp(app);
  await app.register(cors, {
    origin: config.corsOrigins.length === 0 ? false : config.corsOrigins,
    methods: [...connectCors.allowedMethods, "PUT", "PATCH", "DELETE"],
    allowedHeaders: [...connectCors.allowedHeaders, "Authorization", "X-Request-Id"],
    exposedHeaders: [...connectCors.exposedHeaders, "X-Request-Id", "Retry-After"],
    maxAge: 7200,
  });
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "roz REST API", version: SERVER_VERSION, description: "REST next to roz.v1.AgentService on the same port." },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "roz_sk_…" } } },
      security: [{ bearer: [] }],
    },
    // The RPC paths (/roz.v1.*, /grpc.reflection.*) are described by reflection, not OpenAPI.
    transform: ({ schema, url }) => ({ schema: url.startsWith("/roz.") || url.startsWith("/grpc.") ? { ...schema, hide: true } : schema, url }),
  });
  await app.register(fastifyConnectPlugin, {
    routes: (router) => {
      router.service(AgentService, createAgentService({ session: sessionDeps, registry, authenticate, openStreams }));
      registerReflection(router, [AgentService]);
    },
    readMaxBytes: config.maxMessageBytes,
    grpc: true,
    grpcWeb: true,
    connect: true,
    contextValues: (req) => {
      const raw = req.raw as IncomingMessage | Http2ServerRequest;
      return createContextValues().set(rawRequestKey, {
        aborted: () => {
          if ("stream" in raw && raw.stream) return raw.stream.aborted || (raw.stream.rstCode ?? 0) !== 0 || raw.stream.destroyed;
          return raw.socket?.destroyed ?? true;
        },
      });
    },
  });
  await app.register(healthRoutes, {
    readiness: async () => [
      { name: "server", ok: !draining, ...(draining ? { error: "shutting down" } : {}) },
      await store.ping().then(
        () => ({ name: "store", ok: true }),
        (err: unknown) => ({ name: "store", ok: false, error: err instanceof Error ? err.message : String(err) }),
      ),
      busReadiness(bus),
    ],
  });
  await app.register(versionRoutes, {
    version: SERVER_VERSION,
    info: () => ({
      api: "roz.v1",
      protocols: ["grpc", "grpc-web", "connect", "rest"],
      defaultModel: models.defaultModel,
      providers: models.providers().map((p: { name: string }) => p.name),
      store: store.kind,
      bus: bus.kind,
      nodeId: nodeIdOf(config),
    }),
  });
  await app.register(openapiRoutes);
  await app.register(environmentRoutes, { store, models });
  await app.register(sessionRoutes, { store, registry, ...(routing ? { endOnOwner: routing.endOnOwner } : {}) });
  await app.register(keyRoutes, { store, onKeyCreated: () => authenticator.keysChanged() });
  await app.register(metricsRoutes, { registry: metrics.registry });

  // Applies the event-log retention; the store starts no timers of its own.
  const pruneTimer = setInterval(() => {
    store.pruneEvents().catch((err: unknown) => app.log.warn({ err }, "could not prune session events"));
  }, 10 * 60_000);
  pruneTimer.unref();

  return {
    fastify: app,
    config,
    models,
    registry,
    store,
    bus,
    async listen() {
      await app.listen({ host: config.host, port: config.port });
      const address = app.server.address();
      const port = typeof address === "object" && address ? address.port : config.port;
      const host = config.host.includes(":") ? `[${config.host}]` : config.host;
      return `${tls ? "https" : "http"}://${host}:${port}`;
    },
    async close() {
      draining = true;
      routing?.close();
      clearInterval(pruneTimer);
      await onePort?.drain(config.shutdownGraceMs, () => {
        for (const stream of openStreams) stream.shutdown();
      });
      await Promise.all(registry.all().map((s) => registry.end(s, "cancelled", "server shut down")));
      await app.close();
      await bus.close();
      await closeStore();
    },
  };
}
