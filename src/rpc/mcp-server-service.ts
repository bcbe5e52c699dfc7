import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { RozError, toRozError } from "../errors/index.ts";
import type { McpAuth, McpServers, McpServerView } from "../mcp/index.ts";
import { isUuid, type Principal } from "../session/index.ts";
import {
  type McpAuthConfig,
  McpAuthKind,
  McpHealthStatus,
  McpOauthPendingApprovalSchema,
  McpOauthPendingStatus,
  McpServerDetailSchema,
  type McpServerService,
  McpServerSummarySchema,
  McpTransport,
  DeleteMcpServerResponseSchema,
  HealthCheckMcpServerResponseSchema,
  ListMcpServersResponseSchema,
  RegisterMcpServerResponseSchema,
} from "../gen/roz/v1/agent_pb.js";
import { toConnectError } from "./connect-errors.ts";
import type { RpcAuthenticator } from "./context-values.ts";

const authKinds = { none: McpAuthKind.NONE, bearer: McpAuthKind.BEARER, static_header: McpAuthKind.STATIC_HEADER, oauth: McpAuthKind.OAUTH } as const;

/** Health on the wire; an OAuth server not yet authorized has none (UNSPECIFIED, `last_error` says why). */
const healthStatuses = { healthy: McpHealthStatus.HEALTHY, degraded: McpHealthStatus.DEGRADED, oauth_pending: McpHealthStatus.UNSPECIFIED } as const;

/** The fields `McpServerSummary`, `McpServerDetail` and the health answer share. */
const healthOf = (v: McpServerView) => ({
  healthStatus: healthStatuses[v.health],
  failureCount: v.failureCount,
  ...(v.degradedAt !== undefined ? { degradedAt: timestampFromMs(v.degradedAt) } : {}),
  ...(v.lastError !== undefined ? { lastError: v.lastError } : {}),
});

const summaryOf = (v: McpServerView) => ({
  name: v.name,
  transport: McpTransport.STREAMABLE_HTTP,
  url: v.url,
  enabled: v.enabled,
  authKind: authKinds[v.authKind],
  ...healthOf(v),
});

const detailOf = (v: McpServerView) => create(McpServerDetailSchema, { ...summaryOf(v), hasCredentials: v.hasCredentials });

function authFromWire(auth: McpAuthConfig | undefined): McpAuth {
  const config = auth?.config;
  switch (config?.case) {
    case undefined:
    case "noAuth":
      return { kind: "none" };
    case "bearer":
      return { kind: "bearer", token: config.value.token };
    case "staticHeader":
      return { kind: "static_header", headerName: config.value.headerName, headerValue: config.value.headerValue };
    case "oauth":
      return {
        kind: "oauth",
        scopes: config.value.scopes,
        ...(config.value.clientName !== undefined ? { clientName: config.value.clientName } : {}),
        ...(config.value.clientMetadataUrl !== undefined ? { clientMetadataUrl: config.value.clientMetadataUrl } : {}),
      };
  }
}

/**
 * `roz.v1.McpServerService` (session-behaviour.md §12), upstream's messages: Register and
 * Delete need the `mcp` scope, List, Get and HealthCheck any key of the tenant. Register with
 * OAuth answers `oauth_pending` (the user's authorization URL); the server waits for it.
 */
export function createMcpServerService(servers: McpServers, authenticate: RpcAuthenticator): ServiceImpl<typeof McpServerService> {
  const as = async <T>(ctx: HandlerContext, scope: string | undefined, run: (principal: Principal) => Promise<T>): Promise<T> => {
    try {
      return await run(await authenticate(ctx.requestHeader.get("authorization"), scope ?? "any"));
    } catch (err) {
      throw toConnectError(toRozError(err));
    }
  };
  return {
    register: (request, ctx) =>
      as(ctx, "mcp", async ({ tenantId }) => {
        if (request.transport !== McpTransport.UNSPECIFIED && request.transport !== McpTransport.STREAMABLE_HTTP) {
          throw new RozError("invalid_argument", "transport must be MCP_TRANSPORT_STREAMABLE_HTTP");
        }
        if (request.sessionId !== undefined && !isUuid(request.sessionId)) throw new RozError("invalid_argument", "session_id is not a UUID");
        const { server, oauthPending } = await servers.register(tenantId, {
          name: request.name,
          url: request.url,
          enabled: request.enabled,
          auth: authFromWire(request.auth),
          ...(request.sessionId !== undefined ? { sessionId: request.sessionId } : {}),
        });
        if (oauthPending === undefined) return create(RegisterMcpServerResponseSchema, { result: { case: "server", value: detailOf(server) } });
        const pending = { approvalId: oauthPending.approvalId, authorizationUrl: oauthPending.authorizationUrl, status: McpOauthPendingStatus.PENDING };
        return create(RegisterMcpServerResponseSchema, { result: { case: "oauthPending", value: create(McpOauthPendingApprovalSchema, pending) } });
      }),
    list: (_request, ctx) =>
      as(ctx, undefined, async ({ tenantId }) =>
        create(ListMcpServersResponseSchema, { servers: (await servers.list(tenantId)).map((v) => create(McpServerSummarySchema, summaryOf(v))) }),
      ),
    get: (request, ctx) => as(ctx, undefined, async ({ tenantId }) => detailOf(await servers.get(tenantId, request.name))),
    delete: (request, ctx) =>
      as(ctx, "mcp", async ({ tenantId }) => create(DeleteMcpServerResponseSchema, { deleted: await servers.delete(tenantId, request.name) })),
    healthCheck: (request, ctx) =>
      as(ctx, undefined, async ({ tenantId }) => {
        const view = await servers.healthCheck(tenantId, request.name);
        return create(HealthCheckMcpServerResponseSchema, { name: view.name, ...healthOf(view) });
      }),
  };
}
