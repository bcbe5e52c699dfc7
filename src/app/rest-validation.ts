import { Ajv, type Options } from "ajv";
import type { FastifyInstance, FastifySchemaCompiler } from "fastify";
import { RozError } from "../errors/index.ts";
import { MAX_JSON_DEPTH, tooDeepInText } from "../models/index.ts";
import { isUuid } from "../session/index.ts";

/** The formats REST schemas use (`ajv-formats` is not a dependency). */
const formats: Options["formats"] = {
  uuid: isUuid,
  "date-time": (s: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s)),
};

/**
 * Fastify's validator compiler for REST routes. Unlike Fastify's default it neither coerces
 * body types (`{"name": 5}` is a 400, not `"5"`) nor silently drops unknown fields (with
 * `additionalProperties: false` they are a 400 naming the field). Query strings and path
 * parameters are text on the wire, so they are coerced (`?limit=10` → 10).
 */
export function restValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const common: Options = { useDefaults: true, removeAdditional: false, allErrors: false, strict: false, formats };
  const body = new Ajv({ ...common, coerceTypes: false });
  const text = new Ajv({ ...common, coerceTypes: "array" });
  return ({ schema, httpPart }) => (httpPart === "body" ? body : text).compile(schema as object);
}

/** The 400 of a body nested too deeply under top-level field `key` ("" for the body itself). */
function tooDeep(key: string): RozError {
  const field = key === "" ? "body" : `body.${key}`;
  return new RozError("invalid_argument", `${field}: nested deeper than ${MAX_JSON_DEPTH} levels`, { details: { field } });
}

/**
 * The REST JSON parser. A bodiless request (GET, DELETE) that still says `content-type: application/json` — many
 * HTTP clients set it on every call — is served as if it had no body, instead of Fastify's
 * "Body cannot be empty" 400. Any other method and any non-empty body parse as before,
 * after a scan of the text that refuses a body nested deeper than MAX_JSON_DEPTH with a 400
 * naming the top-level field, before anything parses or walks it (serializing one
 * overflowed the stack; parsing one 100,000 levels deep costs as many objects).
 */
export function registerRestJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if (body === "" && (request.method === "DELETE" || request.method === "GET" || request.method === "HEAD")) return done(null, undefined);
    const deep = tooDeepInText(body as string);
    if (deep !== undefined) return done(tooDeep(deep), undefined);
    parseJson(request, body as string, done);
  });
}
