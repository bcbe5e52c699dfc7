import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import cors from "@fastify/cors";
import swagger from "@fastify/swagger";
import { cors as connectCors, createContextValues } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import fastify, { type FastifyInstance } from "fastify";
import { createAgent, type AgentLimits, type PermissionRule } from "../agent/index.ts";
import { afterPendingIo } from "../domain/index.ts";
import { AgentService } from "../gen/roz/v1/agent_pb.js";
import { createModelCatalog, type ModelCatalog } from "../models/index.ts";
import {
  applyRequest,
  AtCapRefusals,
  startsWork,
  createAgentService,
  deliverToSession,
  createSessionRelay,
  encodeGrpcMessagesOf,
  screenToolLists,
  encodeResponse,
  rawRequestKey,
  COMPRESS_MIN_BYTES,
  type RpcAuthenticator,
} from "../rpc/index.ts";
import { registerReflection } from "../rpc/reflection/index.ts";
import {
  SessionDirectory,
  SessionRegistry,
  type SessionDeps,
  type SessionPersistence,
  SessionStream,
  StreamSlots,
  storePersistence,
} from "../session/index.ts";
import { healthRoutes } from "../../routes/health.ts";
import { openapiRoutes } from "../../routes/openapi.ts";
import { versionRoutes } from "../../routes/version.ts";
import { environmentRoutes } from "../../routes/environments.ts";
import { keyRoutes } from "../../routes/keys.ts";
import { metricsRoutes } from "../../routes/metrics.ts";
import { sessionRoutes } from "../../routes/sessions.ts";
import { consoleRoutes } from "../../routes/console.ts";
import { type Authenticator, registerRestAuth } from "../auth/index.ts";
import { openStore, type Store } from "../store/index.ts";
import { Teams } from "../teams/index.ts";
import { encodeTeamEvent } from "../rpc/index.ts";
import { taskRoutes } from "../../routes/tasks.ts";
import { teamExtension } from "./team-wiring.ts";
import { createAuthenticator } from "./auth-setup.ts";
import { EventLoopWatchdog } from "./event-loop-watchdog.ts";
import { StreamFloodCollector } from "./stream-flood-gc.ts";
import type { EventBus } from "../bus/index.ts";
import { busReadiness, nodeIdOf, openBus } from "./bus-setup.ts";
import { createSessionRouting } from "./session-routing.ts";
import { createMetrics } from "./metrics.ts";
import { createRateLimits } from "./rate-limit.ts";
import { registerRestJsonParser, restValidatorCompiler } from "./rest-validation.ts";
import type { Config } from "./config.ts";
import { loggerOptions } from "./logger.ts";
import { OnePortServer, type OnePortOptions } from "./one-port.ts";
import { parsePermissionRules } from "./permission-rules.ts";
import { frameworkErrorReply, registerRestErrors } from "./rest-errors.ts";
import { pingRoundTrip } from "./ping-round-trip.ts";
import { listenFailure, readSettingFile, storeOpenFailure } from "./startup-errors.ts";
import { SERVER_VERSION } from "./version.ts";

/** The console's build output in this installation (`npm run build:web` writes it). */
const defaultConsoleDir = fileURLToPath(new URL("../../web/dist/", import.meta.url));

/** How long after the PING round trip at a request's END_STREAM a reset still counts as the client going away. */
const RESET_AFTER_END_MS = 100;

/** Kept responses a live session holds in memory at most (older ones are read from the store). */
const MEMORY_EVENTS = 2_000;

/** The compressions RPC responses may use (connect's own default), negotiated per call. */
const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];

/** A request's id: the client's `x-request-id` when it is a plain token, else a new UUID. */
function requestIdOf(headers: IncomingHttpHeaders): string {
  const given = headers["x-request-id"];
  return typeof given === "string" && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
}

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
  /** This process's id in the store's `nodes` (ROZ_NODE_ID, else hostname-pid). */
  readonly nodeId: string;
  /** Listens on the configured host and port; resolves with the base URL. */
  listen(): Promise<string>;
  /**
   * Stops accepting; running turns get the grace period to finish (then they are
   * interrupted); every live session is stored and detached (resumable by the next process),
   * open streams end with UNAVAILABLE; then everything closes. Idle streams cost no wait.
   */
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
        ...(config.anthropicApiKey ? { anthropicApiKey: config.anthropicApiKey } : {}),
        ...(config.anthropicBaseURL ? { anthropicBaseURL: config.anthropicBaseURL } : {}),
        ...(config.anthropicThinkingBudget ? { anthropicThinkingBudget: config.anthropicThinkingBudget } : {}),
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
    maxTools: config.maxTools,
    maxToolsPerRequest: config.maxToolsPerRequest,
  };
  const tls =
    config.tlsCert && config.tlsKey ? { cert: readSettingFile("ROZ_TLS_CERT", config.tlsCert), key: readSettingFile("ROZ_TLS_KEY", config.tlsKey) } : undefined;

  let onePort: OnePortServer | undefined;
  let streamFlood: StreamFloodCollector | undefined;
  /** Set once the stream slots exist (below): until then every stream is dispatched. */
  let answerEarly: OnePortOptions["answerEarly"];
  const app = fastify({
    logger: loggerOptions(config),
    genReqId: (req) => requestIdOf(req.headers),
    bodyLimit: config.maxMessageBytes,
    frameworkErrors: frameworkErrorReply,
    serverFactory: (handler) => {
      onePort = new OnePortServer(handler as unknown as ConstructorParameters<typeof OnePortServer>[0], {
        ...(tls ? { tls } : {}),
        maxConcurrentStreams: config.maxConcurrentStreams,
        pingIntervalMs: config.http2PingIntervalMs,
        handshakeTimeoutMs: config.handshakeTimeoutMs,
        headersTimeoutMs: config.headersTimeoutMs,
        maxConnectionsPerAddress: config.maxConnectionsPerAddress,
        maxStreamsPerSecond: config.maxStreamsPerSecond,
        maxResetsPerSecond: config.maxResetsPerSecond,
        maxDrainBytes: config.maxMessageBytes,
        onStream: () => streamFlood?.noteStream(),
        answerEarly: (headers) => answerEarly?.(headers),
      });
      return onePort.server as unknown as import("node:http").Server;
    },
  });
  streamFlood = new StreamFloodCollector({ intervalMs: config.floodGcIntervalMs, log: app.log, collections: metrics.floodCollections });
  // Started by listen(): start-up (module loading, migrations) is not a client's block.
  let watchdog: EventLoopWatchdog | undefined;
  app.addHook("onRequest", async (request, reply) => {
    watchdog?.note({ http: request.method, url: request.url.slice(0, 200), requestId: request.id });
    void reply.header("x-request-id", request.id);
    const contentType = request.headers["content-type"];
    if (typeof contentType === "string" && /^application\/grpc(\+|;|$)/.test(contentType) && request.raw.httpVersionMajor === 2) {
      encodeGrpcMessagesOf(reply.raw as unknown as Http2ServerResponse);
    }
    // Over-cap tool lists are cut before connect decodes them (decoding is what costs).
    // The route's path: a query string or a percent-encoded letter reach the same handler.
    const route = request.routeOptions.url;
    if (request.method === "POST" && route !== undefined) screenToolLists(request.raw, route, contentType, config.maxToolsPerRequest, config.maxMessageBytes);
  });

  const store =
    overrides.store ??
    (await openStore({
      dataDir: config.dataDir,
      ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
      eventRetention: { maxEventsPerSession: config.eventRetention },
      sqliteSynchronous: config.sqliteSynchronous === "full" ? "FULL" : "NORMAL",
      onError: (err) => app.log.error({ err }, "store connection error"),
    }).catch((err: unknown) => {
      throw storeOpenFailure(err, config);
    }));
  const closeStore = async (): Promise<void> => {
    if (!overrides.store) await store.close();
  };
  const nodeId = nodeIdOf(config);
  /**
   * The heartbeat that tells other processes this one still runs its sessions; sessions of
   * nodes that stopped heart-beating stay resumable (adopted on re-attach) until nobody came
   * back for them within the detach grace.
   */
  const heartbeat = async (): Promise<void> => {
    const now = Date.now();
    await store.heartbeatNode(nodeId, now);
    const abandoned = await store.endAbandonedSessions({ aliveSince: now - config.nodeExpiryMs, idleBefore: now - config.detachGraceMs }, now);
    if (abandoned > 0) app.log.warn({ sessions: abandoned }, "ended sessions whose node stopped and that nobody re-attached to");
  };
  let authenticator: Authenticator;
  let bus: EventBus | undefined;
  try {
    bus = overrides.bus ?? (await openBus(config, app.log));
    authenticator = await createAuthenticator(config, store, app.log);
    await heartbeat();
  } catch (err) {
    if (!overrides.bus) await bus?.close();
    await closeStore();
    throw err;
  }
  metrics.observeBus(bus, nodeId);
  /** With each heartbeat: close the tasks of nodes that stopped heart-beating (set once teams exist). */
  let closeOrphanedTasks: (() => Promise<void>) | undefined;
  const heartbeatTimer = setInterval(() => {
    heartbeat()
      .then(() => closeOrphanedTasks?.())
      .catch((err: unknown) => app.log.warn({ err }, "could not write the node heartbeat"));
  }, config.nodeHeartbeatMs);
  heartbeatTimer.unref();
  const authenticate: RpcAuthenticator = overrides.authenticate ?? ((authorization, scope) => authenticator.authenticate(authorization, scope));
  const persistence =
    overrides.persistence ?? storePersistence(store, { id: nodeId, expiryMs: config.nodeExpiryMs }, (op, run) => metrics.observeStore(op, run));
  const rateLimits = createRateLimits(config);

  const teams = new Teams({
    store,
    bus,
    encode: encodeTeamEvent,
    models,
    createAgent,
    agentLimits: limits,
    defaultPermissions,
    defaultMaxContextTokens: config.maxContextTokens,
    limits: {
      workersPerTask: config.teamMaxWorkersPerTask,
      runningWorkersPerTenant: config.teamMaxRunningWorkersPerTenant,
      maxSpawnDepth: config.teamMaxSpawnDepth,
      workerTimeoutMs: config.workerTimeoutMs,
    },
    nodeId,
    nodeExpiryMs: config.nodeExpiryMs,
    log: app.log,
  });
  try {
    const recovered = await teams.recover(true);
    if (recovered > 0) app.log.warn({ tasks: recovered }, "ended tasks of a previous run: their workers failed with timeout");
    closeOrphanedTasks = async () => {
      const closed = await teams.recover();
      if (closed > 0) app.log.warn({ tasks: closed }, "ended tasks of a node that stopped heart-beating: their workers failed with timeout");
    };
  } catch (err) {
    await closeStore();
    throw err;
  }

  const registry = new SessionRegistry();
  // Only a networked bus has other nodes to route to.
  const routing = bus.kind === "memory" ? undefined : createSessionRouting(bus, nodeId, registry);
  const openStreams = new Set<SessionStream>();
  const openWatches = new Set<AbortController>();
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
    extend: teamExtension(teams),
    startTimeoutMs: config.startTimeoutMs,
    encodeEvent: encodeResponse,
    memoryEvents: Math.max(1, Math.min(config.eventRetention, MEMORY_EVENTS)),
  };
  const directory = new SessionDirectory(sessionDeps, registry);
  // Streams of sessions another node owns are relayed over a networked bus.
  const relay = bus.kind === "memory" ? undefined : createSessionRelay(bus, nodeId);
  if (relay) metrics.observeRelay(relay);
  relay?.host({
    openStream: (principal) => new SessionStream(sessionDeps, registry, directory, principal),
    apply: async (stream, request) => {
      if (startsWork(request)) await afterPendingIo();
      await applyRequest(stream, request, { attached: true }, {}, stream.session?.principal ?? { tenantId: "", scopes: [] });
    },
    deliver: (principal, sessionId, request) => deliverToSession({ directory }, principal, sessionId, request),
    track: (stream, open) => {
      if (open) openStreams.add(stream);
      else openStreams.delete(stream);
    },
    draining: () => draining,
    log: app.log,
  });

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
    // Roz-Error-Reason: an RPC error's reason, also for a page (Connect unary sends it as a header).
    exposedHeaders: [...connectCors.exposedHeaders, "X-Request-Id", "Retry-After", "Roz-Error-Reason"],
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
  const revocationsOf = (keyId: string): number => authenticator.revocationsOf(keyId);
  const streamSlots = new StreamSlots(config.maxStreamsPerKey);
  const atCapRefusals = new AtCapRefusals({
    slots: streamSlots,
    trustMs: config.credentialRecheckMs,
    revocationsOf,
    defaultEventFormat: config.eventFormat,
    acceptCompression: ACCEPT_COMPRESSION,
  });
  answerEarly = (headers) => {
    const refusal = atCapRefusals.answer(headers);
    if (refusal === undefined) return undefined;
    metrics.refusedEarly(headers[":path"] ?? "");
    return { ...refusal, headers: { ...refusal.headers, "x-request-id": requestIdOf(headers) } };
  };
  await app.register(fastifyConnectPlugin, {
    routes: (router) => {
      router.service(
        AgentService,
        createAgentService({
          session: sessionDeps,
          registry,
          directory,
          authenticate,
          openStreams,
          defaultEventFormat: config.eventFormat,
          teams,
          openWatches,
          streamSlots,
          atCapRefusals,
          credentialRecheckMs: config.credentialRecheckMs,
          revocationsOf,
          onRevocation: (listener) => authenticator.onRevocation(listener),
          noteOperation: (operation) => watchdog?.note(operation),
          // A lost owner's sessions can be adopted once its heartbeat expired; allow a few heartbeats more.
          ...(relay ? { relay, relocateWithinMs: config.nodeExpiryMs + 3 * config.nodeHeartbeatMs } : {}),
        }),
      );
      registerReflection(router, [AgentService]);
    },
    readMaxBytes: config.maxMessageBytes,
    // The session writer leaves messages of this size on to connect, which compresses them.
    compressMinBytes: COMPRESS_MIN_BYTES,
    acceptCompression: ACCEPT_COMPRESSION,
    grpc: true,
    grpcWeb: true,
    connect: true,
    contextValues: (req) => {
      const raw = req.raw as IncomingMessage | Http2ServerRequest;
      return createContextValues().set(rawRequestKey, {
        ...("stream" in raw && raw.stream ? { body: raw.stream } : {}),
        settled: () =>
          new Promise<void>((resolve) => {
            const stream = "stream" in raw ? raw.stream : undefined;
            const session = stream?.session;
            if (!stream || !session || stream.destroyed || session.destroyed || session.closed) return resolve();
            let timer: NodeJS.Timeout | undefined;
            stream.once("close", () => {
              clearTimeout(timer);
              resolve();
            });
            // A proxy answers the PING itself, and HAProxy passes a client's reset on as END_STREAM
            // followed, a few ms later, by RST_STREAM: a reset that soon after the PING still counts.
            void pingRoundTrip(session).then(() => {
              timer = setTimeout(resolve, RESET_AFTER_END_MS);
            });
          }),
        aborted: () => {
          if ("stream" in raw && raw.stream) return raw.stream.aborted || (raw.stream.rstCode ?? 0) !== 0 || raw.stream.destroyed;
          return raw.socket?.destroyed ?? true;
        },
      });
    },
  });
  // After the Connect plugin, which keeps its own JSON parser in its scope.
  registerRestJsonParser(app);
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
  await app.register(openapiRoutes);
  // The versioned REST API: every route below is under /v1.
  await app.register(
    async (v1) => {
      await v1.register(versionRoutes, {
        version: SERVER_VERSION,
        info: () => ({
          api: "roz.v1",
          protocols: ["grpc", "grpc-web", "connect", "rest"],
          defaultModel: models.defaultModel,
          providers: models.providers().map((p: { name: string }) => p.name),
          store: store.kind,
          bus: bus.kind,
          nodeId,
        }),
      });
      await v1.register(environmentRoutes, { store, models });
      await v1.register(sessionRoutes, { store, registry, ...(routing ? { endOnOwner: routing.endOnOwner } : {}) });
      await v1.register(taskRoutes, { teams });
      await v1.register(keyRoutes, { store, onKeyCreated: () => authenticator.keysChanged(), onKeyRevoked: (keyId) => authenticator.keyRevoked(keyId) });
    },
    { prefix: "/v1" },
  );
  await app.register(metricsRoutes, { registry: metrics.registry });
  if (config.consoleDir !== "off") await app.register(consoleRoutes, { root: config.consoleDir ?? defaultConsoleDir });

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
    teams,
    bus,
    nodeId,
    async listen() {
      await app.ready();
      // The one-port server is bound here rather than by `app.listen()`: Fastify's own
      // "Server listening at http://…" lines ignore TLS behind a serverFactory and repeat per
      // interface; main.ts logs the one correct line.
      await new Promise<void>((resolve, reject) => {
        const server = app.server;
        const onError = (err: Error): void => reject(listenFailure(err, config));
        server.once("error", onError);
        server.listen({ host: config.host, port: config.port }, () => {
          server.off("error", onError);
          resolve();
        });
      });
      watchdog ??= new EventLoopWatchdog({ thresholdMs: 100, log: app.log, blocks: metrics.eventLoopBlocks });
      const address = app.server.address();
      const port = typeof address === "object" && address ? address.port : config.port;
      const host = config.host.includes(":") ? `[${config.host}]` : config.host;
      return `${tls ? "https" : "http"}://${host}:${port}`;
    },
    async close() {
      draining = true;
      watchdog?.stop();
      streamFlood?.stop();
      routing?.close();
      relay?.shutdown();
      clearInterval(pruneTimer);
      clearInterval(heartbeatTimer);
      onePort?.server.close();
      // Only running turns deserve the grace period; at its end they are interrupted.
      const turns = Promise.all(registry.all().map((s) => s.idle()));
      const deadline = new AbortController();
      await Promise.race([turns, delay(config.shutdownGraceMs, undefined, { signal: deadline.signal }).catch(() => undefined)]);
      deadline.abort();
      await Promise.all(registry.all().map((s) => registry.suspend(s)));
      // Stopped at once, so that other nodes adopt the suspended sessions as their clients come back.
      await store.stopNode(nodeId).catch((err: unknown) => app.log.warn({ err }, "could not mark the node stopped"));
      for (const stream of openStreams) stream.shutdown();
      for (const watch of openWatches) watch.abort();
      relay?.close();
      await onePort?.drain(0, () => {});
      await teams.close();
      await app.close();
      if (!overrides.bus) await bus.close();
      await closeStore();
    },
  };
}
