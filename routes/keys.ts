import { grantableScopes, issueKey, type IssuedKey, principalOf, requireScopesHeld, rotateIssuedKey, SCOPES } from "../src/auth/index.ts";
import { RozError } from "../src/errors/index.ts";
import type { ApiKey, Store } from "../src/store/index.ts";
import { errorResponses, idParams, iso, pageQuery, pageRequestOf, pageSchema, type RoutePlugin, timeSchema, toPage } from "./schemas.ts";

export interface KeyRoutesOptions {
  store: Pick<Store, "createKey" | "getKey" | "listKeys" | "revokeKey" | "rotateKey">;
  /** Called after a key was created: the server leaves open mode at once. */
  onKeyCreated(): void;
  /** Called after a key was revoked or rotated: its open streams re-check it at once. */
  onKeyRevoked(keyId: string): void;
}

const keySchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    prefix: { type: "string", description: "the first characters of the secret, to recognise it" },
    scopes: { type: "array", items: { type: "string", enum: SCOPES } },
    created_at: timeSchema,
    last_used_at: timeSchema,
    revoked_at: timeSchema,
    expires_at: timeSchema,
  },
  required: ["id", "name", "prefix", "scopes", "created_at"],
} as const;

const issuedSchema = {
  ...keySchema,
  properties: { ...keySchema.properties, key: { type: "string", description: "the secret: shown only in this answer" } },
  required: [...keySchema.required, "key"],
} as const;

const createBody = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 128, description: "a label for humans" },
    scopes: {
      type: "array",
      items: { type: "string", enum: SCOPES },
      minItems: 1,
      maxItems: SCOPES.length,
      description: "default: the calling key's scopes; a key cannot grant scopes it does not have",
    },
    expires_at: { ...timeSchema, description: "the key stops working at this time (default: never)" },
  },
  additionalProperties: false,
} as const;

/** The REST shape of a key: never its secret or hash. */
const keyJson = (k: ApiKey) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  scopes: k.scopes,
  created_at: iso(k.createdAt),
  ...(k.lastUsedAt !== undefined ? { last_used_at: iso(k.lastUsedAt) } : {}),
  ...(k.revokedAt !== undefined ? { revoked_at: iso(k.revokedAt) } : {}),
  ...(k.expiresAt !== undefined ? { expires_at: iso(k.expiresAt) } : {}),
});

const issuedJson = (issued: IssuedKey) => ({ ...keyJson(issued.key), key: issued.secret });

const notFound = (id: string) => new RozError("not_found", `API key "${id}" not found`);

/** `/auth/keys` (under `/v1`): create (secret shown once), list, get, revoke, rotate; scope `keys`. */
export const keyRoutes: RoutePlugin<KeyRoutesOptions> = async (app, { store, onKeyCreated, onKeyRevoked }) => {
  const config = { scope: "keys" } as const;
  const tags = ["keys"];

  app.post(
    "/auth/keys",
    {
      config,
      schema: {
        summary: "Create an API key (the secret is in this answer only)",
        tags,
        body: createBody,
        response: { 201: issuedSchema, ...errorResponses(413, 415) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const body = request.body;
      // Without a list the new key gets the caller's scopes (`admin` alone stands for all).
      const scopes = grantableScopes(principal, body.scopes ?? (principal.scopes.includes("admin") ? ["admin"] : principal.scopes));
      const expiresAt = body.expires_at === undefined ? undefined : Date.parse(body.expires_at);
      if (expiresAt !== undefined && expiresAt <= Date.now()) {
        throw new RozError("invalid_argument", "body.expires_at: must be in the future", { details: { field: "body.expires_at" } });
      }
      const issued = await issueKey(store, {
        tenantId: principal.tenantId,
        name: body.name ?? "",
        scopes,
        ...(expiresAt !== undefined ? { expiresAt } : {}),
      });
      onKeyCreated();
      return reply.status(201).send(issuedJson(issued));
    },
  );

  app.get(
    "/auth/keys",
    {
      config,
      schema: {
        summary: "List API keys (revoked ones included), newest first",
        tags,
        querystring: pageQuery,
        response: { 200: pageSchema(keySchema), ...errorResponses() },
      },
    },
    async (request) => {
      return toPage(await store.listKeys(principalOf(request).tenantId, pageRequestOf(request.query)), keyJson);
    },
  );

  app.get(
    "/auth/keys/:id",
    { config, schema: { summary: "Get an API key", tags, params: idParams, response: { 200: keySchema, ...errorResponses(404) } } },
    async (request) => {
      const { id } = request.params;
      const key = await store.getKey(principalOf(request).tenantId, id);
      if (!key) throw notFound(id);
      return keyJson(key);
    },
  );

  const revoke = async (principal: ReturnType<typeof principalOf>, id: string): Promise<ApiKey> => {
    const { tenantId } = principal;
    const target = await store.getKey(tenantId, id);
    if (!target) throw notFound(id);
    requireScopesHeld(principal, target.scopes, "revoke");
    if (!(await store.revokeKey(tenantId, id))) throw notFound(id);
    onKeyRevoked(id);
    const key = await store.getKey(tenantId, id);
    if (!key) throw notFound(id);
    return key;
  };

  app.delete(
    "/auth/keys/:id",
    {
      config,
      schema: {
        summary: "Revoke an API key (idempotent)",
        tags,
        params: idParams,
        response: { 204: { type: "null", description: "revoked" }, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      await revoke(principalOf(request), request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.post(
    "/auth/keys/:id/revoke",
    { config, schema: { summary: "Revoke an API key (idempotent)", tags, params: idParams, response: { 200: keySchema, ...errorResponses(404) } } },
    async (request) => keyJson(await revoke(principalOf(request), request.params.id)),
  );

  app.post(
    "/auth/keys/:id/rotate",
    {
      config,
      schema: {
        summary: "Replace a key's secret: the old one stops working, the new one is in this answer only",
        tags,
        params: idParams,
        response: { 201: issuedSchema, ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { id } = request.params;
      const old = await store.getKey(principal.tenantId, id);
      if (!old) throw notFound(id);
      if (old.revokedAt !== undefined) throw new RozError("conflict", `API key "${id}" is revoked and cannot be rotated`);
      requireScopesHeld(principal, old.scopes, "rotate");
      const issued = await rotateIssuedKey(store, principal.tenantId, id);
      if (!issued) throw new RozError("conflict", `API key "${id}" was revoked meanwhile`);
      onKeyRevoked(id);
      onKeyCreated();
      return reply.status(201).send(issuedJson(issued));
    },
  );
};
