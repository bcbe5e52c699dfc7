import { fileURLToPath } from "node:url";
import cors from "@fastify/cors";
import swagger from "@fastify/swagger";
import { cors as connectCors } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { budgetRoutes } from "../../routes/budget.ts";
import { consoleRoutes } from "../../routes/console.ts";
import { conversationRoutes } from "../../routes/conversation.ts";
import { environmentRoutes } from "../../routes/environments.ts";
import { healthRoutes } from "../../routes/health.ts";
import { keyRoutes } from "../../routes/keys.ts";
import { mcpOAuthRoutes } from "../../routes/mcp-oauth.ts";
import { mcpServerRoutes } from "../../routes/mcp-servers.ts";
import { metricsRoutes } from "../../routes/metrics.ts";
import { openapiRoutes } from "../../routes/openapi.ts";
import { sessionLabelRoutes } from "../../routes/session-labels.ts";
import { sessionRoutes } from "../../routes/sessions.ts";
import { taskRoutes } from "../../routes/tasks.ts";
import { versionRoutes } from "../../routes/version.ts";
import { type Authenticator, registerRestAuth } from "../auth/index.ts";
import type { EventBus } from "../bus/index.ts";
import type { SessionRouting } from "../cluster/index.ts";
import type { ModelCatalog } from "../models/index.ts";
import { conversationJson, type RpcAuthenticator } from "../rpc/index.ts";
import { type ConversationControl, type Principal, type SessionRegistry, storedWaitingInputs } from "../session/index.ts";
import type { Store } from "../store/index.ts";
import type { Teams } from "../teams/index.ts";
import { busReadiness } from "./bus-setup.ts";
import type { Config } from "./config.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Mcp } from "./mcp-setup.ts";
import type { Metrics } from "./metrics.ts";
import type { RateLimits } from "./rate-limit.ts";
import { registerRestErrors } from "./rest-errors.ts";
import { registerRestJsonParser, restValidatorCompiler } from "./rest-validation.ts";
import { SERVER_VERSION } from "./version.ts";

/** The console's build output in this installation (`npm run build:web` writes it). */
const defaultConsoleDir = fileURLToPath(new URL("../../web/dist/", import.meta.url));

/**
 * What every HTTP request passes before its route, RPC calls included: the REST error format
 * and validation, REST auth and rate limits, request metrics, CORS, and the OpenAPI document's
 * collector (registered before any route so that it sees them all).
 */
export async function registerRestEdge(
  app: FastifyInstance,
  { config, authenticate, rateLimits, metrics }: { config: Config; authenticate: RpcAuthenticator; rateLimits: RateLimits; metrics: Metrics },
): Promise<void> {
  registerRestErrors(app);
  app.setValidatorCompiler(restValidatorCompiler());
  // REST bodies are JSON only: any other content type is a 415, not a string to validate.
  app.removeContentTypeParser("text/plain");
  registerRestAuth(app, { authenticate, rateLimit: (principal) => rateLimits.rest(principal) });
  metrics.registerHttp(app);
  await app.register(cors, {
    origin: config.corsOrigins.length === 0 ? false : config.corsOrigins,
    methods: [...connectCors.allowedMethods, "PUT", "PATCH", "DELETE"],
    // Roz-Event-Format: a page chooses its stream's event format like any client (@roz/client asks for flat).
    allowedHeaders: [...connectCors.allowedHeaders, "Authorization", "X-Request-Id", "Roz-Event-Format"],
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
}

export interface RestRoutesSetup {
  nodeId: string;
  store: Store;
  bus: EventBus;
  models: ModelCatalog;
  registry: SessionRegistry;
  /** Fork and rollback for REST. */
  conversation: ConversationControl;
  routing: SessionRouting | undefined;
  teams: Teams;
  mcp: Mcp;
  authenticator: Authenticator;
  metrics: Metrics;
  lifecycle: Lifecycle;
}

/** Health and readiness, the OpenAPI document, the versioned REST API under /v1, and /metrics. Registered after the Connect plugin, which keeps its own JSON parser in its scope. */
export async function registerRestRoutes(app: FastifyInstance, setup: RestRoutesSetup): Promise<void> {
  const { nodeId, store, bus, models, registry, conversation, routing, teams, mcp, authenticator, metrics, lifecycle } = setup;
  registerRestJsonParser(app);
  await app.register(healthRoutes, {
    readiness: async () => [
      { name: "server", ok: !lifecycle.closing, ...(lifecycle.closing ? { error: "shutting down" } : {}) },
      await store.ping().then(
        () => ({ name: "store", ok: true }),
        (err: unknown) => ({ name: "store", ok: false, error: err instanceof Error ? err.message : String(err) }),
      ),
      busReadiness(bus),
    ],
  });
  await app.register(openapiRoutes);
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
      const waitingInputs = async (tenantId: string, sessionId: string) =>
        registry.get(tenantId, sessionId)?.waitingInputs ?? storedWaitingInputs((await store.getResumableSession(tenantId, sessionId, Date.now()))?.state);
      await v1.register(sessionRoutes, {
        store,
        registry,
        conversationJson,
        waitingInputs,
        ...(routing ? { endOnOwner: routing.endOnOwner } : {}),
      });
      const control = {
        fork: conversation.fork.bind(conversation),
        rollback: (principal: Principal, id: string, turns: number) =>
          conversation.rollback(principal, id, turns, routing && ((node) => routing.rollbackOnOwner(principal, id, node, turns))),
      };
      await v1.register(conversationRoutes, { control, store, registry, waitingInputs });
      await v1.register(sessionLabelRoutes, { store });
      await v1.register(taskRoutes, { teams });
      await v1.register(mcpServerRoutes, { servers: mcp.servers });
      await v1.register(mcpOAuthRoutes, { servers: mcp.servers });
      await v1.register(budgetRoutes, { store });
      await v1.register(keyRoutes, { store, onKeyCreated: () => authenticator.keysChanged(), onKeyRevoked: (keyId) => authenticator.keyRevoked(keyId) });
    },
    { prefix: "/v1" },
  );
  await app.register(metricsRoutes, { registry: metrics.registry });
}

/** The web console's static files, unless `ROZ_CONSOLE_DIR=off`. */
export async function registerConsole(app: FastifyInstance, config: Pick<Config, "consoleDir">): Promise<void> {
  if (config.consoleDir !== "off") await app.register(consoleRoutes, { root: config.consoleDir ?? defaultConsoleDir });
}
