import type { FromSchema } from "json-schema-to-ts";
import { principalOf } from "../src/auth/index.ts";
import { RozError } from "../src/errors/index.ts";
import type { McpAuth, McpServers, McpServerView } from "../src/mcp/index.ts";
import { errorResponses, iso, type RoutePlugin, timeSchema } from "./schemas.ts";

export interface McpServerRoutesOptions {
  servers: McpServers;
}

const nameParams = {
  type: "object",
  properties: { name: { type: "string", minLength: 1, maxLength: 64 } },
  required: ["name"],
  additionalProperties: false,
} as const;

const authSchema = {
  type: "object",
  properties: {
    kind: { type: "string", enum: ["none", "bearer", "static_header", "oauth"] },
    token: { type: "string", minLength: 1, maxLength: 8192, description: "bearer: the token (stored sealed, never returned)" },
    header_name: { type: "string", minLength: 1, maxLength: 128, description: "static_header: the header's name" },
    header_value: { type: "string", minLength: 1, maxLength: 8192, description: "static_header: its value (stored sealed, never returned)" },
    scopes: { type: "array", maxItems: 64, items: { type: "string", maxLength: 256 }, description: "oauth: the scopes to ask for" },
    client_name: { type: "string", minLength: 1, maxLength: 200, description: "oauth: the name roz registers as (default roz)" },
    client_metadata_url: {
      type: "string",
      maxLength: 2048,
      description: "oauth: an https URL of a client metadata document, used as client id where the server supports it",
    },
  },
  required: ["kind"],
  additionalProperties: false,
} as const;

const createBody = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1, maxLength: 64, description: "unique per tenant; its tools are offered as mcp__{name}__{tool}" },
    url: { type: "string", minLength: 1, maxLength: 2048, description: "the server's Streamable HTTP endpoint" },
    transport: { type: "string", enum: ["streamable_http"] },
    enabled: { type: "boolean", description: "default true" },
    session_id: { type: "string", format: "uuid", description: "only this session sees the server" },
    auth: authSchema,
  },
  required: ["name", "url"],
  additionalProperties: false,
} as const;

const healthProperties = {
  health_status: { type: "string", enum: ["healthy", "degraded", "oauth_pending"] },
  failure_count: { type: "integer" },
  degraded_at: timeSchema,
  last_error: { type: "string" },
} as const;

const serverSchema = {
  type: "object",
  properties: {
    name: { type: "string" },
    transport: { type: "string" },
    url: { type: "string" },
    enabled: { type: "boolean" },
    auth_kind: { type: "string" },
    ...healthProperties,
    has_credentials: { type: "boolean" },
    session_id: { type: "string" },
  },
  required: ["name", "transport", "url", "enabled", "auth_kind", "health_status", "failure_count", "has_credentials"],
} as const;

const oauthPendingSchema = {
  type: "object",
  description: "OAuth: open authorization_url in a browser; the server is usable once the authorization server redirects back",
  properties: { approval_id: { type: "string" }, authorization_url: { type: "string" }, status: { type: "string", enum: ["pending"] } },
  required: ["approval_id", "authorization_url", "status"],
} as const;

const registeredSchema = { ...serverSchema, properties: { ...serverSchema.properties, oauth_pending: oauthPendingSchema } } as const;

const healthSchema = {
  type: "object",
  properties: { name: { type: "string" }, ...healthProperties },
  required: ["name", "health_status", "failure_count"],
} as const;

const healthJson = (v: McpServerView) => ({
  health_status: v.health,
  failure_count: v.failureCount,
  ...(v.degradedAt !== undefined ? { degraded_at: iso(v.degradedAt) } : {}),
  ...(v.lastError !== undefined ? { last_error: v.lastError } : {}),
});

const serverJson = (v: McpServerView) => ({
  name: v.name,
  transport: "streamable_http",
  url: v.url,
  enabled: v.enabled,
  auth_kind: v.authKind,
  ...healthJson(v),
  has_credentials: v.hasCredentials,
  ...(v.sessionId !== undefined ? { session_id: v.sessionId } : {}),
});

const missing = (field: string): never => {
  throw new RozError("invalid_argument", `body.auth.${field} is required for this kind`, { details: { field: `body.auth.${field}` } });
};

function authOf(auth: FromSchema<typeof authSchema> | undefined): McpAuth {
  switch (auth?.kind) {
    case undefined:
    case "none":
      return { kind: "none" };
    case "bearer":
      return { kind: "bearer", token: auth.token ?? missing("token") };
    case "static_header":
      return { kind: "static_header", headerName: auth.header_name ?? missing("header_name"), headerValue: auth.header_value ?? missing("header_value") };
    case "oauth":
      return {
        kind: "oauth",
        scopes: auth.scopes ?? [],
        ...(auth.client_name !== undefined ? { clientName: auth.client_name } : {}),
        ...(auth.client_metadata_url !== undefined ? { clientMetadataUrl: auth.client_metadata_url } : {}),
      };
  }
}

/**
 * `/mcp-servers` (under `/v1`, session-behaviour.md §12): registering and deleting need the
 * `mcp` scope, reading and health checks any key of the tenant. Registering with OAuth answers
 * the server (`health_status: oauth_pending`) with `oauth_pending{approval_id, authorization_url}`.
 */
export const mcpServerRoutes: RoutePlugin<McpServerRoutesOptions> = async (app, { servers }) => {
  const tags = ["mcp servers"];
  const manage = { scope: "mcp" } as const;
  const read = { scope: "any" } as const;

  app.post(
    "/mcp-servers",
    {
      config: manage,
      schema: {
        summary: "Register an MCP server (a name registered again is replaced)",
        tags,
        body: createBody,
        response: { 201: registeredSchema, ...errorResponses(404, 409, 412, 413, 415, 502) },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const { server, oauthPending } = await servers.register(principalOf(request).tenantId, {
        name: body.name,
        url: body.url,
        enabled: body.enabled ?? true,
        auth: authOf(body.auth),
        ...(body.session_id !== undefined ? { sessionId: body.session_id } : {}),
      });
      const pending = oauthPending && { approval_id: oauthPending.approvalId, authorization_url: oauthPending.authorizationUrl, status: "pending" as const };
      return reply.status(201).send({ ...serverJson(server), ...(pending ? { oauth_pending: pending } : {}) });
    },
  );

  app.get(
    "/mcp-servers",
    {
      config: read,
      schema: {
        summary: "List the tenant's MCP servers",
        tags,
        response: { 200: { type: "object", properties: { servers: { type: "array", items: serverSchema } } } },
      },
    },
    async (request) => ({ servers: (await servers.list(principalOf(request).tenantId)).map(serverJson) }),
  );

  app.get(
    "/mcp-servers/:name",
    { config: read, schema: { summary: "Get an MCP server", tags, params: nameParams, response: { 200: serverSchema, ...errorResponses(404) } } },
    async (request) => serverJson(await servers.get(principalOf(request).tenantId, request.params.name)),
  );

  app.delete(
    "/mcp-servers/:name",
    {
      config: manage,
      schema: {
        summary: "Delete an MCP server (deleted: false when there was none)",
        tags,
        params: nameParams,
        response: { 200: { type: "object", properties: { deleted: { type: "boolean" } }, required: ["deleted"] } },
      },
    },
    async (request) => ({ deleted: await servers.delete(principalOf(request).tenantId, request.params.name) }),
  );

  app.post(
    "/mcp-servers/:name/health",
    {
      config: read,
      schema: { summary: "Check an MCP server now (lists its tools)", tags, params: nameParams, response: { 200: healthSchema, ...errorResponses(404) } },
    },
    async (request) => {
      const view = await servers.healthCheck(principalOf(request).tenantId, request.params.name);
      return { name: view.name, ...healthJson(view) };
    },
  );
};
