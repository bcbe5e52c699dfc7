import type { FromSchema } from "json-schema-to-ts";
import { compileGlob, type PermissionRule } from "../src/agent/index.ts";
import { principalOf } from "../src/auth/index.ts";
import { RozError } from "../src/errors/index.ts";
import type { ModelCatalog } from "../src/models/index.ts";
import type { Environment, EnvironmentPatch, NewEnvironment, Store } from "../src/store/index.ts";
import {
  budgetFromJson,
  budgetJson,
  budgetSchema,
  errorResponses,
  idParams,
  iso,
  pageQuery,
  pageRequestOf,
  pageSchema,
  permissionRuleSchema,
  type RoutePlugin,
  timeSchema,
  toPage,
} from "./schemas.ts";

export interface EnvironmentRoutesOptions {
  store: Pick<Store, "createEnvironment" | "getEnvironment" | "listEnvironments" | "updateEnvironment" | "deleteEnvironment">;
  models: Pick<ModelCatalog, "resolve">;
}

type RuleJson = FromSchema<typeof permissionRuleSchema>;

const fields = {
  name: { type: "string", minLength: 1, maxLength: 128, pattern: "^\\S(.*\\S)?$", description: "unique per tenant" },
  kind: { type: "string", minLength: 1, maxLength: 64, description: "free-form classification (default: default)" },
  default_model: { type: "string", minLength: 1, maxLength: 256, description: "provider/model used when a session names none" },
  system_instructions: { type: "string", maxLength: 200_000, description: "added to the agent's base instructions" },
  permissions: { type: "array", maxItems: 1000, items: permissionRuleSchema, description: "enforced before the defaults; first match wins" },
  tool_defaults: { type: "object", additionalProperties: true, description: "per-tool settings, stored as given" },
  teams: {
    type: "object",
    properties: { enabled: { type: "boolean" } },
    required: ["enabled"],
    additionalProperties: false,
    description: "whether its sessions' models get the team tools spawn_worker and wait_for_workers; absent: ROZ_TEAMS_DEFAULT decides",
  },
  budget: {
    ...budgetSchema,
    description:
      "what each of its sessions may spend over its life: max_tokens (input + output tokens) and max_cost_usd; with StartSession.budget too, the lower limit of each applies",
  },
  is_default: { type: "boolean", description: "the environment used when StartSession.environment_id is empty" },
} as const;

const createBody = { type: "object", properties: fields, required: ["name"], additionalProperties: false } as const;

const patchBody = {
  type: "object",
  properties: {
    ...fields,
    default_model: { ...fields.default_model, type: ["string", "null"], description: "null clears it" },
    system_instructions: { ...fields.system_instructions, type: ["string", "null"], description: "null clears them" },
    teams: { ...fields.teams, type: ["object", "null"], description: "null: back to the server default (ROZ_TEAMS_DEFAULT)" },
    budget: { ...fields.budget, type: ["object", "null"], description: "null (or {}) removes the budget" },
  },
  additionalProperties: false,
} as const;

const environmentSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    ...fields,
    name: { type: "string" },
    is_default: { type: "boolean" },
    created_at: timeSchema,
    updated_at: timeSchema,
  },
  required: ["id", "name", "kind", "permissions", "tool_defaults", "is_default", "created_at", "updated_at"],
} as const;

const ruleJson = (r: PermissionRule) => ({
  tool_pattern: r.toolPattern,
  policy: r.policy,
  ...(r.category !== undefined ? { category: r.category } : {}),
  ...(r.reason !== undefined ? { reason: r.reason } : {}),
});

/** The REST shape of an environment. */
const environmentJson = (e: Environment) => ({
  id: e.id,
  name: e.name,
  kind: e.kind,
  ...(e.defaultModel !== undefined ? { default_model: e.defaultModel } : {}),
  ...(e.instructions !== undefined ? { system_instructions: e.instructions } : {}),
  permissions: e.permissions.map(ruleJson),
  tool_defaults: e.toolDefaults,
  ...(e.teamsEnabled !== undefined ? { teams: { enabled: e.teamsEnabled } } : {}),
  ...(e.budget !== undefined ? { budget: budgetJson(e.budget) } : {}),
  is_default: e.isDefault,
  created_at: iso(e.createdAt),
  updated_at: iso(e.updatedAt),
});

/** Rules from JSON, with every glob compiled once so that a broken one is a 400 now, not a surprise later. */
function rulesFromJson(rules: RuleJson[]): PermissionRule[] {
  return rules.map((r, i) => {
    const glob = compileGlob(r.tool_pattern);
    if (!glob.ok) {
      const field = `body.permissions.${i}.tool_pattern`;
      throw new RozError("invalid_argument", `${field}: invalid glob "${r.tool_pattern}": ${glob.error}`, { details: { field } });
    }
    return {
      toolPattern: r.tool_pattern,
      policy: r.policy,
      ...(r.category !== undefined ? { category: r.category } : {}),
      ...(r.reason !== undefined ? { reason: r.reason } : {}),
    };
  });
}

/** A default model must resolve against the configured catalog (422 `model_unavailable` otherwise). */
function checkModel(models: EnvironmentRoutesOptions["models"], name: string | null | undefined): void {
  if (typeof name === "string" && !models.resolve(name)) {
    throw new RozError("model_unavailable", `body.default_model: model "${name}" is not configured on this server`, {
      details: { field: "body.default_model" },
    });
  }
}

const notFound = (id: string) => new RozError("not_found", `environment "${id}" not found`);

/** `/environments` CRUD (under `/v1`), scoped to the caller's tenant (scope `environments`). */
export const environmentRoutes: RoutePlugin<EnvironmentRoutesOptions> = async (app, { store, models }) => {
  const config = { scope: "environments" } as const;
  const tags = ["environments"];

  app.post(
    "/environments",
    {
      config,
      schema: { summary: "Create an environment", tags, body: createBody, response: { 201: environmentSchema, ...errorResponses(409, 413, 415, 422) } },
    },
    async (request, reply) => {
      const body = request.body;
      checkModel(models, body.default_model);
      const budget = body.budget && budgetFromJson(body.budget);
      const input: NewEnvironment = {
        name: body.name,
        ...(body.kind !== undefined ? { kind: body.kind } : {}),
        ...(typeof body.default_model === "string" ? { defaultModel: body.default_model } : {}),
        ...(typeof body.system_instructions === "string" ? { instructions: body.system_instructions } : {}),
        ...(body.permissions ? { permissions: rulesFromJson(body.permissions) } : {}),
        ...(body.tool_defaults ? { toolDefaults: body.tool_defaults } : {}),
        ...(body.teams ? { teamsEnabled: body.teams.enabled } : {}),
        ...(budget ? { budget } : {}),
        ...(body.is_default !== undefined ? { isDefault: body.is_default } : {}),
      };
      const env = await store.createEnvironment(principalOf(request).tenantId, input);
      return reply.status(201).send(environmentJson(env));
    },
  );

  app.get(
    "/environments",
    {
      config,
      schema: {
        summary: "List environments, newest first",
        tags,
        querystring: pageQuery,
        response: { 200: pageSchema(environmentSchema), ...errorResponses() },
      },
    },
    async (request) => {
      const page = await store.listEnvironments(principalOf(request).tenantId, pageRequestOf(request.query));
      return toPage(page, environmentJson);
    },
  );

  app.get(
    "/environments/:id",
    { config, schema: { summary: "Get an environment", tags, params: idParams, response: { 200: environmentSchema, ...errorResponses(404) } } },
    async (request) => {
      const { id } = request.params;
      const env = await store.getEnvironment(principalOf(request).tenantId, id);
      if (!env) throw notFound(id);
      return environmentJson(env);
    },
  );

  app.patch(
    "/environments/:id",
    {
      config,
      schema: {
        summary: "Change an environment",
        tags,
        params: idParams,
        body: patchBody,
        response: { 200: environmentSchema, ...errorResponses(404, 409, 413, 415, 422) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const body = request.body;
      checkModel(models, body.default_model);
      const patch: EnvironmentPatch = {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.kind !== undefined ? { kind: body.kind } : {}),
        ...(body.default_model !== undefined ? { defaultModel: body.default_model } : {}),
        ...(body.system_instructions !== undefined ? { instructions: body.system_instructions } : {}),
        ...(body.permissions ? { permissions: rulesFromJson(body.permissions) } : {}),
        ...(body.tool_defaults ? { toolDefaults: body.tool_defaults } : {}),
        ...(body.teams !== undefined ? { teamsEnabled: body.teams === null ? null : body.teams.enabled } : {}),
        ...(body.budget !== undefined ? { budget: body.budget === null ? null : (budgetFromJson(body.budget) ?? null) } : {}),
        ...(body.is_default !== undefined ? { isDefault: body.is_default } : {}),
      };
      const env = await store.updateEnvironment(principalOf(request).tenantId, id, patch);
      if (!env) throw notFound(id);
      return environmentJson(env);
    },
  );

  app.delete(
    "/environments/:id",
    {
      config,
      schema: {
        summary: "Delete an environment (sessions that used it keep their history)",
        tags,
        params: idParams,
        response: { 204: { type: "null", description: "deleted" }, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      if (!(await store.deleteEnvironment(principalOf(request).tenantId, id))) throw notFound(id);
      return reply.status(204).send(null);
    },
  );
};
